// libpq's functions that PostgresClient calls, defined here under their own names and bound on first
// use to the library loaded with dlopen (clibpq_loader.h). The prototypes come from libpq-fe.h, so a
// signature that does not match libpq's does not compile. Calling one before clicker_pq_load()
// succeeded is a bug of the caller: PostgresConnection loads the library before anything else.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "/usr/include/postgresql/libpq-fe.h"
#include "clibpq_loader.h"

#define CLICKER_PQ_RETURNING(X) \
    X(PGconn *, PQconnectdbParams, (const char *const *keywords, const char *const *values, int expand_dbname), (keywords, values, expand_dbname)) \
    X(ConnStatusType, PQstatus, (const PGconn *conn), (conn)) \
    X(char *, PQerrorMessage, (const PGconn *conn), (conn)) \
    X(int, PQconnectionNeedsPassword, (const PGconn *conn), (conn)) \
    X(PQconninfoOption *, PQconninfoParse, (const char *conninfo, char **errmsg), (conninfo, errmsg)) \
    X(PQconninfoOption *, PQconninfo, (PGconn *conn), (conn)) \
    X(PGresult *, PQexecParams, (PGconn *conn, const char *command, int nParams, const Oid *paramTypes, \
                                 const char *const *paramValues, const int *paramLengths, const int *paramFormats, \
                                 int resultFormat), \
      (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat)) \
    X(PGresult *, PQexecPrepared, (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, \
                                   const int *paramLengths, const int *paramFormats, int resultFormat), \
      (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat)) \
    X(PGresult *, PQprepare, (PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes), \
      (conn, stmtName, query, nParams, paramTypes)) \
    X(ExecStatusType, PQresultStatus, (const PGresult *res), (res)) \
    X(char *, PQresultErrorField, (const PGresult *res, int fieldcode), (res, fieldcode)) \
    X(char *, PQresultErrorMessage, (const PGresult *res), (res)) \
    X(int, PQenterPipelineMode, (PGconn *conn), (conn)) \
    X(int, PQexitPipelineMode, (PGconn *conn), (conn)) \
    X(int, PQsendQueryPrepared, (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, \
                                 const int *paramLengths, const int *paramFormats, int resultFormat), \
      (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat)) \
    X(int, PQpipelineSync, (PGconn *conn), (conn)) \
    X(PGresult *, PQgetResult, (PGconn *conn), (conn)) \
    X(int, PQserverVersion, (const PGconn *conn), (conn)) \
    X(int, PQsocket, (const PGconn *conn), (conn)) \
    X(int, PQntuples, (const PGresult *res), (res)) \
    X(int, PQnfields, (const PGresult *res), (res)) \
    X(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    X(char *, PQcmdTuples, (PGresult *res), (res)) \
    X(PGnotify *, PQnotifies, (PGconn *conn), (conn)) \
    X(int, PQconsumeInput, (PGconn *conn), (conn))

#define CLICKER_PQ_VOID(X) \
    X(PQfinish, (PGconn *conn), (conn)) \
    X(PQconninfoFree, (PQconninfoOption *connOptions), (connOptions)) \
    X(PQfreemem, (void *ptr), (ptr)) \
    X(PQclear, (PGresult *res), (res))

#define POINTER(ret, name, params, args) static ret (*bound_##name) params;
#define VOID_POINTER(name, params, args) static void (*bound_##name) params;
CLICKER_PQ_RETURNING(POINTER)
CLICKER_PQ_VOID(VOID_POINTER)

#define WRAPPER(ret, name, params, args) ret name params { return bound_##name args; }
#define VOID_WRAPPER(name, params, args) void name params { bound_##name args; }
CLICKER_PQ_RETURNING(WRAPPER)
CLICKER_PQ_VOID(VOID_WRAPPER)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[256];

static void load(void) {
    // RTLD_LOCAL: libpq's symbols stay out of the global scope, so they never meet the wrappers above.
    void *library = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "PostgreSQL's client library could not be loaded (%s): install libpq5",
                 why ? why : "libpq.so.5");
        return;
    }
#define BIND(name) \
    if (!(*(void **)&bound_##name = dlsym(library, #name))) { \
        snprintf(failure, sizeof failure, "PostgreSQL's client library has no %s: libpq 14 or later is needed", #name); \
        return; \
    }
#define BIND_RETURNING(ret, name, params, args) BIND(name)
#define BIND_VOID(name, params, args) BIND(name)
    CLICKER_PQ_RETURNING(BIND_RETURNING)
    CLICKER_PQ_VOID(BIND_VOID)
}

int clicker_pq_load(char *error, unsigned long capacity) {
    pthread_once(&once, load);
    if (failure[0] == 0) return 0;
    if (error && capacity > 0) snprintf(error, capacity, "%s", failure);
    return -1;
}
