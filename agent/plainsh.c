/* sandbox-agent: shell text that needs no shell (plainsh.h). The rule is
 * an allow-list of bytes, so that nothing bash expands or treats as syntax
 * (quotes, $, `, \, globs, ~, braces, #, redirections, ;, &, |, newlines,
 * parentheses, !) ever takes this path. */
#include <stdbool.h>
#include <string.h>

#include "plainsh.h"

/* Words bash would not exec as a program: reserved words and builtins. */
static const char *const not_programs[] = {
        "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
        "do", "done", "in", "function", "time", "coproc",
        ".", ":", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command",
        "compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo",
        "enable", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash",
        "help", "history", "jobs", "kill", "let", "local", "logout", "mapfile", "popd",
        "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift",
        "shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset",
        "ulimit", "umask", "unalias", "unset", "wait",
};

static bool word_byte(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != '\0' && strchr("-_./:,+@%^=", c) != NULL);
}

static bool is(const char *w, size_t len, const char *name)
{
        return strlen(name) == len && memcmp(w, name, len) == 0;
}

/* The first word w (len bytes) is a program bash would exec, or a builtin
 * whose program does what the builtin does with these words. n: words in
 * all; dash: a later word starts with '-'. */
static bool runs_as_program(const char *w, size_t len, size_t n, bool dash)
{
        bool builtin = false;

        for (size_t i = 0; i < sizeof(not_programs) / sizeof(not_programs[0]); i++)
                builtin = builtin || is(w, len, not_programs[i]);
        if (!builtin)
                return true;
        if (is(w, len, "true") || is(w, len, "false"))
                return n == 1; /* the programs know --help and --version */
        /* echo without an option: both print the words, a space between,
         * and a newline (no backslash can be in a plain word) */
        return is(w, len, "echo") && !dash;
}

size_t plainsh_split(char *text, char **argv, size_t max)
{
        const char *first = NULL;
        size_t n = 0, first_len = 0;
        bool dash = false;
        char *p;

        if (max < 2)
                return 0;
        for (const char *s = text; *s; s++)
                if (*s != ' ' && *s != '\t' && !word_byte((unsigned char)*s))
                        return 0;
        /* check everything first, so that text stays as it was on refusal */
        for (const char *s = text;;) {
                size_t w;

                s += strspn(s, " \t");
                if (!*s)
                        break;
                w = strcspn(s, " \t");
                if (n == 0) {
                        first = s;
                        first_len = w;
                        if (memchr(s, '=', w))
                                return 0; /* an assignment (or what bash may take for one) */
                } else if (s[0] == '-') {
                        dash = true;
                }
                if (++n > max - 1)
                        return 0;
                s += w;
        }
        if (n == 0 || !runs_as_program(first, first_len, n, dash))
                return 0;
        n = 0;
        for (p = text; *p;) {
                p += strspn(p, " \t");
                if (!*p)
                        break;
                argv[n++] = p;
                p += strcspn(p, " \t");
                if (*p)
                        *p++ = '\0';
        }
        argv[n] = NULL;
        return n;
}
