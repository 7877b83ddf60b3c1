// Capability system calls for the HCI backend: glibc declares no capget/capset, and prctl is
// variadic (not callable from Swift), so thin fixed-signature wrappers.
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int clicker_capget(struct __user_cap_header_struct *header, struct __user_cap_data_struct *data) {
    return (int)syscall(SYS_capget, header, data);
}

static inline int clicker_capset(struct __user_cap_header_struct *header, const struct __user_cap_data_struct *data) {
    return (int)syscall(SYS_capset, header, data);
}

static inline int clicker_prctl(int option, unsigned long arg2, unsigned long arg3) {
    return prctl(option, arg2, arg3, 0UL, 0UL);
}
