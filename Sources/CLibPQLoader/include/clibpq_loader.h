#ifndef CLIBPQ_LOADER_H
#define CLIBPQ_LOADER_H

/// Loads PostgreSQL's client library (libpq.so.5) on first use, once for the process, and binds the
/// libpq functions PostgresClient calls to it. Returns 0 when it is loaded; otherwise writes why
/// into `error` (`capacity` bytes) and returns -1, and every later call does the same.
///
/// The tally does not link libpq: it and the two dozen libraries it brings (OpenSSL, GnuTLS, Kerberos,
/// LDAP, …) would be mapped into every run, about 5 MB of the daemon's resident memory, where only
/// receivers and a tally with --ledger use them.
int clicker_pq_load(char *error, unsigned long capacity);

#endif
