// bluez-loadgen: plays bluetoothd on a (private) bus for the DBusIngest benchmark.
//
// Owns org.bluez, answers GetManagedObjects with one adapter (hci0) and N devices
// (/org/bluez/hci0/dev_XX_XX_XX_XX_XX_XX: Device1 with the properties bluetoothd 5.66 gives an unnamed
// LE advertiser, ManufacturerData among them, plus the two freedesktop interfaces), answers the
// adapter methods a central calls (SetDiscoveryFilter, StartDiscovery, StopDiscovery, RemoveDevice,
// Properties.Get/GetAll), and after the first StartDiscovery (the first N with --discoveries N, for N
// scanners side by side) emits
//   PropertiesChanged("org.bluez.Device1", {ManufacturerData: a{qv}, RSSI: n}, [])
// round-robin over the devices at a fixed rate or as fast as the bus takes them.
//
// It must not be the bottleneck: libdbus does the handshake and method calls; the signals are
// marshalled by hand into one reusable buffer (no allocation per signal) and written to the socket
// in batches. Every message is written whole before libdbus touches the socket again.
//
// Payloads (the manufacturer data after the company ID) come from a file, one per line in hex,
// optionally preceded by the device address: "AA:BB:CC:DD:EE:FF 0102ab..." . Device d in round r
// sends payload[(r * devices + d) % lines]. Without addresses, device d is C0:00:00:00:HH:LL.
//
// With --advertising legacy|extended the adapter also offers LEAdvertisingManager1 as bluetoothd 5.66 or
// 5.82 does (advertising.c), so that a tally's beacon broadcasts while it is measured; the end line then
// counts the registrations and the frame changes (PropertiesChanged) the beacon sent.
//
// Output (stdout, one line each): "ready <unique-name>" once org.bluez is owned, "started" when
// sending begins, and at the end a JSON line {"sent":..,"seconds":..,"rate":..,"cpu_seconds":..}.
// It then keeps serving method calls until stdin closes or SIGTERM/SIGINT.
//
// With --reload-first it sends nothing before the first SIGHUP (the ballots of a poll whose join code is
// known only once the tally runs). SIGHUP re-reads the payload file (same devices; addresses on its lines are ignored) and prints
// "reloaded <lines>": the soak benchmark moves the room to the next question or answer this way.

#define _GNU_SOURCE
#include <dbus/dbus.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "advertising.h"

#define MAX_PAYLOAD 240
#define BATCH 256
#define MSG_MAX 512

typedef struct {
    char address[18];
    char path[64];
} device_t;

typedef struct {
    uint8_t bytes[MAX_PAYLOAD];
    size_t len;
} payload_t;

static device_t *devices;
static size_t ndevices = 1000;
static payload_t *payloads;
static size_t npayloads;
static uint16_t company = 0xFFFF;
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t reload_requested;
static int discovery_started;  // StartDiscovery calls so far
static int discoveries_wanted = 1;
static unsigned long removed_devices;
static int reload_first; // --reload-first: send nothing before the first SIGHUP
static int reloaded;

static void die(const char *msg) {
    fprintf(stderr, "bluez-loadgen: %s\n", msg);
    exit(2);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec
        + (double)ru.ru_stime.tv_usec / 1e6;
}

// ---------------------------------------------------------------- hand marshalling (little endian)

typedef struct {
    uint8_t *p;
    size_t n;
} buf_t;

static void pad(buf_t *b, size_t a) {
    while (b->n % a) b->p[b->n++] = 0;
}
static void put_u8(buf_t *b, uint8_t v) { b->p[b->n++] = v; }
static void put_u16(buf_t *b, uint16_t v) {
    pad(b, 2);
    b->p[b->n++] = (uint8_t)v;
    b->p[b->n++] = (uint8_t)(v >> 8);
}
static void put_u32_at(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static void put_u32(buf_t *b, uint32_t v) {
    pad(b, 4);
    put_u32_at(b->p + b->n, v);
    b->n += 4;
}
static void put_str(buf_t *b, const char *s) { // 's' and 'o'
    size_t l = strlen(s);
    put_u32(b, (uint32_t)l);
    memcpy(b->p + b->n, s, l + 1);
    b->n += l + 1;
}
static void put_sig(buf_t *b, const char *s) { // 'g'
    size_t l = strlen(s);
    put_u8(b, (uint8_t)l);
    memcpy(b->p + b->n, s, l + 1);
    b->n += l + 1;
}
static void header_field(buf_t *b, uint8_t code, const char *sig, const char *value) {
    pad(b, 8);
    put_u8(b, code);
    put_sig(b, sig);
    if (sig[0] == 'g') put_sig(b, value);
    else put_str(b, value);
}

// One PropertiesChanged signal into out; returns its length.
static size_t build_signal(uint8_t *out, const char *path, uint32_t serial, const payload_t *pl, int16_t rssi) {
    buf_t b = {out, 0};
    put_u8(&b, 'l');
    put_u8(&b, 4); // SIGNAL
    put_u8(&b, 1); // NO_REPLY_EXPECTED
    put_u8(&b, 1); // protocol version
    put_u32(&b, 0); // body length, patched below
    put_u32(&b, serial);
    put_u32(&b, 0); // header fields array length, patched below
    size_t fields_start = b.n;
    header_field(&b, 1, "o", path);
    header_field(&b, 2, "s", "org.freedesktop.DBus.Properties");
    header_field(&b, 3, "s", "PropertiesChanged");
    header_field(&b, 8, "g", "sa{sv}as");
    put_u32_at(out + 12, (uint32_t)(b.n - fields_start));
    pad(&b, 8);
    size_t body_start = b.n;
    put_str(&b, "org.bluez.Device1");
    put_u32(&b, 0); // a{sv} length
    size_t dict_len_at = b.n - 4;
    pad(&b, 8);
    size_t dict_start = b.n;
    // {"ManufacturerData": <a{qv}>}
    pad(&b, 8);
    put_str(&b, "ManufacturerData");
    put_sig(&b, "a{qv}");
    put_u32(&b, 0);
    size_t md_len_at = b.n - 4;
    pad(&b, 8);
    size_t md_start = b.n;
    pad(&b, 8);
    put_u16(&b, company);
    put_sig(&b, "ay");
    put_u32(&b, (uint32_t)pl->len);
    memcpy(b.p + b.n, pl->bytes, pl->len);
    b.n += pl->len;
    put_u32_at(out + md_len_at, (uint32_t)(b.n - md_start));
    // {"RSSI": <n>}
    pad(&b, 8);
    put_str(&b, "RSSI");
    put_sig(&b, "n");
    put_u16(&b, (uint16_t)rssi);
    put_u32_at(out + dict_len_at, (uint32_t)(b.n - dict_start));
    put_u32(&b, 0); // as: empty
    put_u32_at(out + 4, (uint32_t)(b.n - body_start));
    return b.n;
}

// ---------------------------------------------------------------- input

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void load_payloads(const char *file, int *have_addresses) {
    FILE *f = fopen(file, "r");
    if (!f) die("cannot open the payload file");
    size_t cap = 1024;
    payloads = calloc(cap, sizeof *payloads);
    devices = calloc(cap, sizeof *devices);
    char line[4096];
    *have_addresses = -1;
    while (fgets(line, sizeof line, f)) {
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#' || *s == '\n' || *s == 0) continue;
        if (npayloads == cap) {
            cap *= 2;
            payloads = realloc(payloads, cap * sizeof *payloads);
            devices = realloc(devices, cap * sizeof *devices);
        }
        int with_addr = strlen(s) > 18 && s[2] == ':' && s[17] == ' ';
        if (*have_addresses == -1) *have_addresses = with_addr;
        else if (*have_addresses != with_addr) die("payload lines must all have an address, or none");
        if (with_addr) {
            memcpy(devices[npayloads].address, s, 17);
            devices[npayloads].address[17] = 0;
            s += 18;
        }
        payload_t *p = &payloads[npayloads];
        p->len = 0;
        while (hexval(s[0]) >= 0 && hexval(s[1]) >= 0) {
            if (p->len == MAX_PAYLOAD) die("payload longer than 240 bytes");
            p->bytes[p->len++] = (uint8_t)(hexval(s[0]) << 4 | hexval(s[1]));
            s += 2;
        }
        npayloads++;
    }
    fclose(f);
    if (npayloads == 0) die("the payload file has no payload lines");
}

// Re-reads only the payloads of FILE (SIGHUP). Keeps the old ones if the file cannot be read.
static void reload_payloads(const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) { fprintf(stderr, "bluez-loadgen: cannot reopen the payload file\n"); return; }
    size_t cap = npayloads > 0 ? npayloads : 1024, n = 0;
    payload_t *fresh = calloc(cap, sizeof *fresh);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#' || *s == '\n' || *s == 0) continue;
        if (strlen(s) > 18 && s[2] == ':' && s[17] == ' ') s += 18;
        if (n == cap) { cap *= 2; fresh = realloc(fresh, cap * sizeof *fresh); }
        payload_t *p = &fresh[n];
        p->len = 0;
        while (hexval(s[0]) >= 0 && hexval(s[1]) >= 0 && p->len < MAX_PAYLOAD) {
            p->bytes[p->len++] = (uint8_t)(hexval(s[0]) << 4 | hexval(s[1]));
            s += 2;
        }
        n++;
    }
    fclose(f);
    if (n == 0) { free(fresh); fprintf(stderr, "bluez-loadgen: reloaded file has no payloads\n"); return; }
    free(payloads);
    payloads = fresh;
    npayloads = n;
    printf("reloaded %zu\n", n);
}

// ---------------------------------------------------------------- method calls

static void append_variant_str(DBusMessageIter *dict, const char *key, int type, const void *value) {
    DBusMessageIter entry, var;
    char sig[2] = {(char)type, 0};
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, sig, &var);
    dbus_message_iter_append_basic(&var, type, value);
    dbus_message_iter_close_container(&entry, &var);
    dbus_message_iter_close_container(dict, &entry);
}

// An `as` or `ay` property (UUIDs, AdvertisingFlags).
static void append_variant_array(DBusMessageIter *dict, const char *key, int element, const void *items, int n) {
    DBusMessageIter entry, var, arr;
    char sig[3] = {'a', (char)element, 0}, el[2] = {(char)element, 0};
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, sig, &var);
    dbus_message_iter_open_container(&var, DBUS_TYPE_ARRAY, el, &arr);
    if (element == DBUS_TYPE_BYTE) dbus_message_iter_append_fixed_array(&arr, DBUS_TYPE_BYTE, &items, n);
    else for (int i = 0; i < n; i++) dbus_message_iter_append_basic(&arr, element, &((const char *const *)items)[i]);
    dbus_message_iter_close_container(&var, &arr);
    dbus_message_iter_close_container(&entry, &var);
    dbus_message_iter_close_container(dict, &entry);
}

// An interface with no properties (bluetoothd lists Introspectable and Properties on every object).
static void append_empty_interface(DBusMessageIter *ifaces, const char *name) {
    DBusMessageIter iface, props;
    dbus_message_iter_open_container(ifaces, DBUS_TYPE_DICT_ENTRY, NULL, &iface);
    dbus_message_iter_append_basic(&iface, DBUS_TYPE_STRING, &name);
    dbus_message_iter_open_container(&iface, DBUS_TYPE_ARRAY, "{sv}", &props);
    dbus_message_iter_close_container(&iface, &props);
    dbus_message_iter_close_container(ifaces, &iface);
}

static void append_adapter_props(DBusMessageIter *props) {
    const char *addr = "00:11:22:33:44:55", *name = "loadgen";
    dbus_bool_t yes = 1, discovering = discovery_started ? 1 : 0;
    append_variant_str(props, "Address", DBUS_TYPE_STRING, &addr);
    append_variant_str(props, "Name", DBUS_TYPE_STRING, &name);
    append_variant_str(props, "Alias", DBUS_TYPE_STRING, &name);
    append_variant_str(props, "Powered", DBUS_TYPE_BOOLEAN, &yes);
    append_variant_str(props, "Discovering", DBUS_TYPE_BOOLEAN, &discovering);
}

static DBusMessage *managed_objects(DBusMessage *call) {
    DBusMessage *reply = dbus_message_new_method_return(call);
    DBusMessageIter it, objs, obj, ifaces, iface, props, entry, var, md, mdentry, mdvar, bytes;
    dbus_message_iter_init_append(reply, &it);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{oa{sa{sv}}}", &objs);

    const char *adapter_path = "/org/bluez/hci0", *adapter_iface = "org.bluez.Adapter1";
    dbus_message_iter_open_container(&objs, DBUS_TYPE_DICT_ENTRY, NULL, &obj);
    dbus_message_iter_append_basic(&obj, DBUS_TYPE_OBJECT_PATH, &adapter_path);
    dbus_message_iter_open_container(&obj, DBUS_TYPE_ARRAY, "{sa{sv}}", &ifaces);
    dbus_message_iter_open_container(&ifaces, DBUS_TYPE_DICT_ENTRY, NULL, &iface);
    dbus_message_iter_append_basic(&iface, DBUS_TYPE_STRING, &adapter_iface);
    dbus_message_iter_open_container(&iface, DBUS_TYPE_ARRAY, "{sv}", &props);
    append_adapter_props(&props);
    dbus_message_iter_close_container(&iface, &props);
    dbus_message_iter_close_container(&ifaces, &iface);
    adv_append_manager_interface(&ifaces);
    dbus_message_iter_close_container(&obj, &ifaces);
    dbus_message_iter_close_container(&objs, &obj);

    for (size_t d = 0; d < ndevices; d++) {
        const char *path = devices[d].path, *dev_iface = "org.bluez.Device1";
        const char *address = devices[d].address, *atype = "random";
        int16_t rssi = -60;
        dbus_bool_t no = 0;
        dbus_message_iter_open_container(&objs, DBUS_TYPE_DICT_ENTRY, NULL, &obj);
        dbus_message_iter_append_basic(&obj, DBUS_TYPE_OBJECT_PATH, &path);
        dbus_message_iter_open_container(&obj, DBUS_TYPE_ARRAY, "{sa{sv}}", &ifaces);
        dbus_message_iter_open_container(&ifaces, DBUS_TYPE_DICT_ENTRY, NULL, &iface);
        dbus_message_iter_append_basic(&iface, DBUS_TYPE_STRING, &dev_iface);
        dbus_message_iter_open_container(&iface, DBUS_TYPE_ARRAY, "{sv}", &props);
        // The Device1 properties bluetoothd 5.66 gives an unnamed LE advertiser, in its order.
        char alias[18];
        snprintf(alias, sizeof alias, "%.2s-%.2s-%.2s-%.2s-%.2s-%.2s", address, address + 3, address + 6, address + 9,
                 address + 12, address + 15);
        const char *alias_p = alias;
        const uint8_t flags[] = {0x06};
        append_variant_str(&props, "Address", DBUS_TYPE_STRING, &address);
        append_variant_str(&props, "AddressType", DBUS_TYPE_STRING, &atype);
        append_variant_str(&props, "Alias", DBUS_TYPE_STRING, &alias_p);
        append_variant_str(&props, "Paired", DBUS_TYPE_BOOLEAN, &no);
        append_variant_str(&props, "Bonded", DBUS_TYPE_BOOLEAN, &no);
        append_variant_str(&props, "Trusted", DBUS_TYPE_BOOLEAN, &no);
        append_variant_str(&props, "Blocked", DBUS_TYPE_BOOLEAN, &no);
        append_variant_str(&props, "LegacyPairing", DBUS_TYPE_BOOLEAN, &no);
        append_variant_str(&props, "RSSI", DBUS_TYPE_INT16, &rssi);
        append_variant_str(&props, "Connected", DBUS_TYPE_BOOLEAN, &no);
        append_variant_array(&props, "UUIDs", DBUS_TYPE_STRING, NULL, 0);
        append_variant_str(&props, "Adapter", DBUS_TYPE_OBJECT_PATH, &adapter_path);
        append_variant_str(&props, "ServicesResolved", DBUS_TYPE_BOOLEAN, &no);
        append_variant_array(&props, "AdvertisingFlags", DBUS_TYPE_BYTE, flags, 1);
        // ManufacturerData {company: payload of round 0}
        const char *mdkey = "ManufacturerData";
        const payload_t *pl = &payloads[d % npayloads];
        const uint8_t *pb = pl->bytes;
        dbus_message_iter_open_container(&props, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
        dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &mdkey);
        dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "a{qv}", &var);
        dbus_message_iter_open_container(&var, DBUS_TYPE_ARRAY, "{qv}", &md);
        dbus_message_iter_open_container(&md, DBUS_TYPE_DICT_ENTRY, NULL, &mdentry);
        dbus_message_iter_append_basic(&mdentry, DBUS_TYPE_UINT16, &company);
        dbus_message_iter_open_container(&mdentry, DBUS_TYPE_VARIANT, "ay", &mdvar);
        dbus_message_iter_open_container(&mdvar, DBUS_TYPE_ARRAY, "y", &bytes);
        dbus_message_iter_append_fixed_array(&bytes, DBUS_TYPE_BYTE, &pb, (int)pl->len);
        dbus_message_iter_close_container(&mdvar, &bytes);
        dbus_message_iter_close_container(&mdentry, &mdvar);
        dbus_message_iter_close_container(&md, &mdentry);
        dbus_message_iter_close_container(&var, &md);
        dbus_message_iter_close_container(&entry, &var);
        dbus_message_iter_close_container(&props, &entry);
        dbus_message_iter_close_container(&iface, &props);
        dbus_message_iter_close_container(&ifaces, &iface);
        append_empty_interface(&ifaces, "org.freedesktop.DBus.Introspectable");
        append_empty_interface(&ifaces, "org.freedesktop.DBus.Properties");
        dbus_message_iter_close_container(&obj, &ifaces);
        dbus_message_iter_close_container(&objs, &obj);
    }
    dbus_message_iter_close_container(&it, &objs);
    return reply;
}

static DBusHandlerResult handle(DBusConnection *conn, DBusMessage *msg, void *data) {
    (void)data;
    if (dbus_message_get_type(msg) != DBUS_MESSAGE_TYPE_METHOD_CALL) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    const char *iface = dbus_message_get_interface(msg), *member = dbus_message_get_member(msg);
    const char *path = dbus_message_get_path(msg);
    DBusMessage *reply = NULL;
    if (!iface) iface = "";
    if (!strcmp(member, "GetManagedObjects") && !strcmp(path, "/")) {
        reply = managed_objects(msg);
    } else if (!strcmp(path, "/org/bluez/hci0") && adv_handle_call(conn, msg)) {
        return DBUS_HANDLER_RESULT_HANDLED; // answered there (a registration once its properties are read)
    } else if (!strcmp(iface, "org.bluez.Adapter1") && !strcmp(path, "/org/bluez/hci0")) {
        if (!strcmp(member, "StartDiscovery")) discovery_started++;
        if (!strcmp(member, "RemoveDevice")) removed_devices++;
        reply = dbus_message_new_method_return(msg);
    } else if (!strcmp(iface, "org.freedesktop.DBus.Properties") && !strcmp(path, "/org/bluez/hci0")
               && !strcmp(member, "GetAll")) {
        DBusMessageIter it, props;
        const char *of = "";
        dbus_message_get_args(msg, NULL, DBUS_TYPE_STRING, &of, DBUS_TYPE_INVALID);
        reply = dbus_message_new_method_return(msg);
        dbus_message_iter_init_append(reply, &it);
        dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &props);
        if (!strcmp(of, "org.bluez.LEAdvertisingManager1")) {
            if (adv_mode != ADV_NONE) adv_append_manager_props(&props);
        } else {
            append_adapter_props(&props);
        }
        dbus_message_iter_close_container(&it, &props);
    } else {
        reply = dbus_message_new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "not served by bluez-loadgen");
    }
    dbus_connection_send(conn, reply, NULL);
    dbus_message_unref(reply);
    return DBUS_HANDLER_RESULT_HANDLED;
}

// Signals from the bus (the advertisements' PropertiesChanged, once registered) go to the advertising manager.
static DBusHandlerResult on_signal_message(DBusConnection *conn, DBusMessage *msg, void *data) {
    (void)data;
    if (dbus_message_get_type(msg) == DBUS_MESSAGE_TYPE_SIGNAL) adv_note_signal(conn, msg);
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

// Lets libdbus read and answer whatever arrived, then writes its replies out completely.
static void service_libdbus(DBusConnection *conn) {
    dbus_connection_read_write(conn, 0);
    while (dbus_connection_dispatch(conn) == DBUS_DISPATCH_DATA_REMAINS) {}
    dbus_connection_flush(conn);
}

// Writes all of buf to fd (non-blocking socket: waits for room), serving nothing in between.
static void write_all(int fd, const uint8_t *buf, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w > 0) {
            buf += w;
            len -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, 100);
        } else {
            die("write to the bus failed");
        }
    }
}

static void on_signal(int s) {
    (void)s;
    stop_requested = 1;
}

static void on_hup(int s) {
    (void)s;
    reload_requested = 1;
}

static void usage(void) {
    fprintf(stderr,
            "usage: bluez-loadgen --address BUS --payloads FILE [--devices N] [--rate PER_S (0: as fast as possible)]\n"
            "                     [--count N | --seconds S] [--company ID] [--discoveries N]\n"
            "                     [--advertising none|legacy|extended] [--reload-first]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *address = NULL, *payload_file = NULL;
    double rate = 0, seconds = 0;
    unsigned long long count = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--reload-first")) {
            reload_first = 1;
            continue;
        }
        if (!v) usage();
        if (!strcmp(a, "--address")) address = v;
        else if (!strcmp(a, "--payloads")) payload_file = v;
        else if (!strcmp(a, "--devices")) ndevices = strtoul(v, NULL, 0);
        else if (!strcmp(a, "--rate")) rate = strtod(v, NULL);
        else if (!strcmp(a, "--count")) count = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--seconds")) seconds = strtod(v, NULL);
        else if (!strcmp(a, "--company")) company = (uint16_t)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--discoveries")) discoveries_wanted = atoi(v);
        else if (!strcmp(a, "--advertising")) {
            if (!strcmp(v, "none")) adv_mode = ADV_NONE;
            else if (!strcmp(v, "legacy")) adv_mode = ADV_LEGACY;
            else if (!strcmp(v, "extended")) adv_mode = ADV_EXTENDED;
            else usage();
        }
        else usage();
        i++;
    }
    if (!address || !payload_file || ndevices == 0 || (count == 0 && seconds <= 0)) usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, on_hup);

    int have_addresses;
    load_payloads(payload_file, &have_addresses);
    if (have_addresses && ndevices > npayloads) ndevices = npayloads;
    devices = realloc(devices, (ndevices > npayloads ? ndevices : npayloads) * sizeof *devices);
    for (size_t d = 0; d < ndevices; d++) {
        if (!have_addresses)
            snprintf(devices[d].address, sizeof devices[d].address, "C0:00:00:00:%02X:%02X",
                     (unsigned)((d >> 8) & 0xFF), (unsigned)(d & 0xFF));
        char *a = devices[d].address;
        snprintf(devices[d].path, sizeof devices[d].path, "/org/bluez/hci0/dev_%c%c_%c%c_%c%c_%c%c_%c%c_%c%c", a[0],
                 a[1], a[3], a[4], a[6], a[7], a[9], a[10], a[12], a[13], a[15], a[16]);
    }

    // Self-check: libdbus must accept the hand-marshalled signal.
    uint8_t probe[MSG_MAX];
    size_t probe_len = build_signal(probe, devices[0].path, 1, &payloads[0], -42);
    DBusError err;
    dbus_error_init(&err);
    DBusMessage *parsed = dbus_message_demarshal((const char *)probe, (int)probe_len, &err);
    if (!parsed) {
        fprintf(stderr, "bluez-loadgen: hand-marshalled signal rejected: %s\n", err.message);
        return 2;
    }
    if (strcmp(dbus_message_get_signature(parsed), "sa{sv}as") != 0) die("hand-marshalled signal has a wrong signature");
    dbus_message_unref(parsed);

    DBusConnection *conn = dbus_connection_open_private(address, &err);
    if (!conn || !dbus_bus_register(conn, &err)) {
        fprintf(stderr, "bluez-loadgen: cannot connect to %s: %s\n", address, err.message);
        return 2;
    }
    int r = dbus_bus_request_name(conn, "org.bluez", DBUS_NAME_FLAG_DO_NOT_QUEUE, &err);
    if (r != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) die("cannot own org.bluez");
    DBusObjectPathVTable vt = {.message_function = handle};
    dbus_connection_register_fallback(conn, "/", &vt, NULL);
    dbus_connection_add_filter(conn, on_signal_message, NULL, NULL);
    int fd = -1;
    if (!dbus_connection_get_unix_fd(conn, &fd)) die("no socket");
    printf("ready %s\n", dbus_bus_get_unique_name(conn));

    // Wait for the central(s) to start discovery (each has subscribed and mirrored the tree by then).
    while ((discovery_started < discoveries_wanted || (reload_first && !reloaded)) && !stop_requested) {
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 50);
        if (p.revents & (POLLHUP | POLLERR)) die("the bus went away before sending began");
        service_libdbus(conn);
        if (reload_requested) { // the ballots of a poll whose join code is known only now (DBusIngest --mode daemon)
            reload_requested = 0;
            reload_payloads(payload_file);
            reloaded = 1;
        }
    }
    service_libdbus(conn);
    printf("started\n");

    uint8_t *batch = malloc((size_t)BATCH * MSG_MAX);
    unsigned long long sent = 0;
    uint32_t serial = 0x40000000u; // away from libdbus's own serials
    double t0 = now_s(), c0 = cpu_s();
    unsigned long changes0 = adv_changes;
    for (;;) {
        if (stop_requested) break;
        if (reload_requested) {
            reload_requested = 0;
            reload_payloads(payload_file);
        }
        double elapsed = now_s() - t0;
        if (count && sent >= count) break;
        if (!count && elapsed >= seconds) break;
        unsigned long long due = BATCH;
        if (rate > 0) {
            double target = rate * elapsed;
            due = target > (double)sent ? (unsigned long long)(target - (double)sent) : 0;
            if (due == 0) {
                struct pollfd p = {fd, POLLIN, 0};
                if (poll(&p, 1, 1) > 0) service_libdbus(conn);
                continue;
            }
            if (due > BATCH) due = BATCH;
        }
        if (count && due > count - sent) due = count - sent;
        size_t len = 0;
        for (unsigned long long i = 0; i < due; i++) {
            unsigned long long k = sent + i;
            size_t d = (size_t)(k % ndevices), round = (size_t)(k / ndevices);
            const payload_t *pl = &payloads[(round * ndevices + d) % npayloads];
            len += build_signal(batch + len, devices[d].path, serial++, pl, (int16_t)(-40 - (int)(k % 50)));
            if (serial == 0) serial = 0x40000000u;
        }
        write_all(fd, batch, len);
        sent += due;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) > 0) service_libdbus(conn);
    }
    double elapsed = now_s() - t0, cpu = cpu_s() - c0;
    printf("{\"sent\":%llu,\"seconds\":%.6f,\"rate\":%.1f,\"cpu_seconds\":%.6f,\"removed_devices\":%lu,"
           "\"adv_registrations\":%lu,\"adv_refusals\":%lu,\"adv_changes\":%lu,\"adv_changes_while_sending\":%lu}\n",
           sent, elapsed, elapsed > 0 ? (double)sent / elapsed : 0.0, cpu, removed_devices, adv_registrations,
           adv_refusals, adv_changes, adv_changes - changes0);

    // Keep serving (discovery restarts, RemoveDevice) until told to stop or stdin closes.
    while (!stop_requested) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {0, POLLIN, 0}};
        if (poll(p, 2, 100) < 0 && errno != EINTR) break;
        if (p[1].revents & (POLLIN | POLLHUP)) {
            char c[64];
            if (read(0, c, sizeof c) <= 0) break;
        }
        if (p[0].revents & (POLLHUP | POLLERR)) break;
        service_libdbus(conn);
    }
    dbus_connection_close(conn);
    dbus_connection_unref(conn);
    free(batch);
    return 0;
}
