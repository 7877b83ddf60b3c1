// libpq's types and prototypes only: the library itself is loaded when first used (CLibPQLoader), so
// nothing links it. Debian's libpq-dev puts the header here.
#include "/usr/include/postgresql/libpq-fe.h"
