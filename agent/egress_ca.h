/* egress_ca: make the sandbox trust the deployment's egress CA
 * (docs/EGRESS.md, "Injection over HTTPS"), the certificate Squid signs the
 * hosts it decrypts for the Credential Vault with. The broker copies it into
 * the read-only egress directory as ca.pem (never its key); without that
 * file this does nothing. */
#pragma once

#include "egress.h"

#define EGRESS_CA_IN EGRESS_DIR_IN "/ca.pem"

/* Before the entrypoint starts: append the CA to the image's bundle (the
 * first of Debian's, Fedora's, openSUSE's, Alpine's paths that exists; none:
 * a new Debian-path bundle with this CA alone), once (a restart finds it
 * there), and a copy into /usr/local/share/ca-certificates when that exists
 * (update-ca-certificates keeps it). Sets, unless set already,
 * NODE_EXTRA_CA_CERTS (the file itself), SSL_CERT_FILE and
 * REQUESTS_CA_BUNDLE (the bundle). A read-only root leaves only
 * NODE_EXTRA_CA_CERTS (logged). */
void egress_ca_trust(void);
