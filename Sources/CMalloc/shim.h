// glibc's allocator settings (mallopt), which the Glibc module does not export.
#include <malloc.h>
