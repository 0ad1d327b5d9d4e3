/* fuzz_agent_cron: the schedule of a periodic lifecycle hook
 * (agent/cron.c), a tenant's text, parsed by the broker at create and by
 * sandbox-agent. The input is the text. Contracts: parsing the same text
 * again gives the same schedule; a parsed schedule's next run is -1 or
 * strictly after now, on a whole minute (cron fields) or exactly now + N
 * (@every, N in 1..CRON_EVERY_MAX_S), and the run after it later still.
 * Any crash, sanitizer report or abort() is a bug. */
#include <string.h>

#include "cron.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const long long nows[] = { 0, 1796478432, 1830297599, 4102444799 };
        char text[CRON_TEXT_MAX + 16];
        struct cron a, b;

        if (size >= sizeof(text))
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        if (cron_parse(text, &a) < 0)
                return 0;
        CHECK(cron_parse(text, &b) == 0 && memcmp(&a, &b, sizeof(a)) == 0);
        for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
                long long n = cron_next(&a, nows[i]), m;

                if (a.every_s) {
                        CHECK(a.every_s >= 1 && a.every_s <= CRON_EVERY_MAX_S &&
                              n == nows[i] + a.every_s);
                        continue;
                }
                if (n < 0)
                        continue;
                CHECK(n > nows[i] && n % 60 == 0);
                m = cron_next(&a, n);
                CHECK(m == -1 || m > n);
        }
        return 0;
}
