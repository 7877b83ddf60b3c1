// bluez-loadgen's LE advertising manager: what bluetoothd offers a broadcaster, so that a tally whose
// beacon really broadcasts can be measured against the generator (DBusIngest --mode daemon).
//
// As bluetoothd (src/advertising.c) does it:
// - RegisterAdvertisement(o, a{sv}) reads the advertisement's properties back from its owner
//   (Properties.GetAll("org.bluez.LEAdvertisement1")) before it answers, refuses a Type other than
//   broadcast/peripheral, a SecondaryChannel the adapter does not list and manufacturer data longer than
//   the controller takes (ADV_LEGACY: 31 bytes of AD less Flags and the AD header; ADV_EXTENDED: 238 bytes
//   with a secondary channel, as 5.82 on Linux 6.12 with MaxAdvLen 251);
// - it then watches the object's PropertiesChanged (a match rule on its owner and path): each one is a
//   refresh of the advertising instance, after which bluetoothd writes the TX power the kernel chose back
//   to the object (Properties.Set "TxPower"), whose answer it does not wait for;
// - UnregisterAdvertisement drops the watch.
#include "advertising.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int adv_mode = ADV_NONE;
unsigned long adv_registrations, adv_refusals, adv_changes, adv_tx_power_writes;

#define MAX_ADS 8
#define ADV_IFACE "org.bluez.LEAdvertisement1"
#define MANAGER_IFACE "org.bluez.LEAdvertisingManager1"
#define PROPS_IFACE "org.freedesktop.DBus.Properties"

typedef struct {
    int used;
    char owner[128];
    char path[256];
} ad_t;

static ad_t ads[MAX_ADS];
static int pending; // registrations waiting for their GetAll

static int active_count(void) {
    int n = 0;
    for (int i = 0; i < MAX_ADS; i++) n += ads[i].used;
    return n;
}

static ad_t *find_ad(const char *owner, const char *path) {
    if (!owner || !path) return NULL;
    for (int i = 0; i < MAX_ADS; i++)
        if (ads[i].used && !strcmp(ads[i].owner, owner) && !strcmp(ads[i].path, path)) return &ads[i];
    return NULL;
}

static void watch_rule(char *rule, size_t size, const ad_t *ad) {
    snprintf(rule, size, "type='signal',sender='%s',path='%s',interface='" PROPS_IFACE "',member='PropertiesChanged'",
             ad->owner, ad->path);
}

static void entry(DBusMessageIter *dict, const char *key, int type, const void *value) {
    DBusMessageIter e, v;
    char sig[2] = {(char)type, 0};
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
    dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, sig, &v);
    dbus_message_iter_append_basic(&v, type, value);
    dbus_message_iter_close_container(&e, &v);
    dbus_message_iter_close_container(dict, &e);
}

static void string_list(DBusMessageIter *dict, const char *key, const char *const *items, int n) {
    DBusMessageIter e, v, a;
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
    dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "as", &v);
    dbus_message_iter_open_container(&v, DBUS_TYPE_ARRAY, "s", &a);
    for (int i = 0; i < n; i++) dbus_message_iter_append_basic(&a, DBUS_TYPE_STRING, &items[i]);
    dbus_message_iter_close_container(&v, &a);
    dbus_message_iter_close_container(&e, &v);
    dbus_message_iter_close_container(dict, &e);
}

void adv_append_manager_props(DBusMessageIter *props) {
    static const char *const includes[] = {"tx-power", "appearance", "local-name"};
    static const char *const channels[] = {"1M", "2M", "Coded"};
    static const char *const features[] = {"CanSetTxPower", "HardwareOffload"};
    uint8_t active = (uint8_t)active_count(), supported = (uint8_t)(MAX_ADS - active);
    entry(props, "ActiveInstances", DBUS_TYPE_BYTE, &active);
    entry(props, "SupportedInstances", DBUS_TYPE_BYTE, &supported);
    string_list(props, "SupportedIncludes", includes, 3);
    string_list(props, "SupportedSecondaryChannels", channels, 3);
    if (adv_mode != ADV_EXTENDED) return;
    // Listed by bluetoothd with experimental features only (which is also when it applies intervals).
    string_list(props, "SupportedFeatures", features, 2);
    DBusMessageIter e, v, caps;
    const char *key = "SupportedCapabilities";
    uint8_t max_adv = 251, max_scan = 251;
    int16_t min_tx = -34, max_tx = 7;
    dbus_message_iter_open_container(props, DBUS_TYPE_DICT_ENTRY, NULL, &e);
    dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "a{sv}", &v);
    dbus_message_iter_open_container(&v, DBUS_TYPE_ARRAY, "{sv}", &caps);
    entry(&caps, "MaxAdvLen", DBUS_TYPE_BYTE, &max_adv);
    entry(&caps, "MaxScnRspLen", DBUS_TYPE_BYTE, &max_scan);
    entry(&caps, "MinTxPower", DBUS_TYPE_INT16, &min_tx);
    entry(&caps, "MaxTxPower", DBUS_TYPE_INT16, &max_tx);
    dbus_message_iter_close_container(&v, &caps);
    dbus_message_iter_close_container(&e, &v);
    dbus_message_iter_close_container(props, &e);
}

void adv_append_manager_interface(DBusMessageIter *ifaces) {
    if (adv_mode == ADV_NONE) return;
    DBusMessageIter iface, props;
    const char *name = MANAGER_IFACE;
    dbus_message_iter_open_container(ifaces, DBUS_TYPE_DICT_ENTRY, NULL, &iface);
    dbus_message_iter_append_basic(&iface, DBUS_TYPE_STRING, &name);
    dbus_message_iter_open_container(&iface, DBUS_TYPE_ARRAY, "{sv}", &props);
    adv_append_manager_props(&props);
    dbus_message_iter_close_container(&iface, &props);
    dbus_message_iter_close_container(ifaces, &iface);
}

// What a registration asks for, read from the a{sv} of GetAll.
typedef struct {
    int type_ok, secondary, longest;
} wanted_t;

static int longest_manufacturer_value(DBusMessageIter *variant) {
    DBusMessageIter dict, ent, v, bytes;
    int longest = 0;
    if (dbus_message_iter_get_arg_type(variant) != DBUS_TYPE_ARRAY) return 0;
    dbus_message_iter_recurse(variant, &dict);
    for (; dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY; dbus_message_iter_next(&dict)) {
        dbus_message_iter_recurse(&dict, &ent);
        if (!dbus_message_iter_next(&ent) || dbus_message_iter_get_arg_type(&ent) != DBUS_TYPE_VARIANT) continue;
        dbus_message_iter_recurse(&ent, &v);
        if (dbus_message_iter_get_arg_type(&v) != DBUS_TYPE_ARRAY) continue;
        dbus_message_iter_recurse(&v, &bytes);
        const uint8_t *p = NULL;
        int n = 0;
        if (dbus_message_iter_get_arg_type(&bytes) == DBUS_TYPE_BYTE) dbus_message_iter_get_fixed_array(&bytes, &p, &n);
        if (n > longest) longest = n;
    }
    return longest;
}

static wanted_t read_wanted(DBusMessage *reply) {
    wanted_t w = {0, 0, 0};
    DBusMessageIter it, dict, ent, v;
    if (!dbus_message_iter_init(reply, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY) return w;
    dbus_message_iter_recurse(&it, &dict);
    for (; dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY; dbus_message_iter_next(&dict)) {
        const char *key = NULL;
        dbus_message_iter_recurse(&dict, &ent);
        dbus_message_iter_get_basic(&ent, &key);
        if (!dbus_message_iter_next(&ent)) continue;
        dbus_message_iter_recurse(&ent, &v);
        if (!strcmp(key, "Type") && dbus_message_iter_get_arg_type(&v) == DBUS_TYPE_STRING) {
            const char *type = NULL;
            dbus_message_iter_get_basic(&v, &type);
            w.type_ok = !strcmp(type, "broadcast") || !strcmp(type, "peripheral");
        } else if (!strcmp(key, "SecondaryChannel")) {
            w.secondary = 1;
        } else if (!strcmp(key, "ManufacturerData")) {
            w.longest = longest_manufacturer_value(&v);
        }
    }
    return w;
}

typedef struct {
    DBusConnection *conn;
    DBusMessage *call; // the RegisterAdvertisement being answered
} registration_t;

static void refuse(DBusConnection *conn, DBusMessage *call, const char *name, const char *text) {
    DBusMessage *r = dbus_message_new_error(call, name, text);
    dbus_connection_send(conn, r, NULL);
    dbus_message_unref(r);
    adv_refusals++;
}

static void got_properties(DBusPendingCall *pc, void *data) {
    registration_t *reg = data;
    DBusMessage *reply = dbus_pending_call_steal_reply(pc);
    const char *owner = dbus_message_get_sender(reg->call), *path = NULL;
    dbus_message_get_args(reg->call, NULL, DBUS_TYPE_OBJECT_PATH, &path, DBUS_TYPE_INVALID);
    pending--;
    wanted_t w = reply && dbus_message_get_type(reply) == DBUS_MESSAGE_TYPE_METHOD_RETURN ? read_wanted(reply)
                                                                                         : (wanted_t){0, 0, 0};
    int limit = adv_mode == ADV_EXTENDED && w.secondary ? 251 - 13 : 31 - 3 - 4;
    ad_t *slot = NULL;
    for (int i = 0; i < MAX_ADS && !slot; i++)
        if (!ads[i].used) slot = &ads[i];
    if (!reply || dbus_message_get_type(reply) != DBUS_MESSAGE_TYPE_METHOD_RETURN) {
        refuse(reg->conn, reg->call, "org.bluez.Error.Failed", "Failed to read advertisement properties");
    } else if (!w.type_ok) {
        refuse(reg->conn, reg->call, "org.bluez.Error.InvalidArguments", "Invalid Type");
    } else if (w.longest > limit) {
        refuse(reg->conn, reg->call, "org.bluez.Error.InvalidLength", "Advertising data too long");
    } else if (!slot || !owner || !path || find_ad(owner, path)) {
        refuse(reg->conn, reg->call, "org.bluez.Error.NotPermitted", "Maximum advertisements reached");
    } else {
        char rule[512];
        slot->used = 1;
        snprintf(slot->owner, sizeof slot->owner, "%s", owner);
        snprintf(slot->path, sizeof slot->path, "%s", path);
        watch_rule(rule, sizeof rule, slot);
        dbus_bus_add_match(reg->conn, rule, NULL); // NULL error: sent without waiting for the bus
        DBusMessage *ok = dbus_message_new_method_return(reg->call);
        dbus_connection_send(reg->conn, ok, NULL);
        dbus_message_unref(ok);
        adv_registrations++;
    }
    if (reply) dbus_message_unref(reply);
}

static void free_registration(void *data) {
    registration_t *reg = data;
    dbus_message_unref(reg->call);
    dbus_free(reg);
}

int adv_handle_call(DBusConnection *conn, DBusMessage *msg) {
    if (adv_mode == ADV_NONE || !dbus_message_has_interface(msg, MANAGER_IFACE)) return 0;
    const char *path = NULL, *owner = dbus_message_get_sender(msg);
    if (!dbus_message_get_args(msg, NULL, DBUS_TYPE_OBJECT_PATH, &path, DBUS_TYPE_INVALID)) {
        refuse(conn, msg, "org.bluez.Error.InvalidArguments", "Invalid arguments in method call");
        return 1;
    }
    if (dbus_message_has_member(msg, "RegisterAdvertisement")) {
        if (find_ad(owner, path) || pending >= MAX_ADS) {
            refuse(conn, msg, "org.bluez.Error.AlreadyExists", "Advertisement already registered");
            return 1;
        }
        DBusMessage *get = dbus_message_new_method_call(owner, path, PROPS_IFACE, "GetAll");
        const char *iface = ADV_IFACE;
        dbus_message_append_args(get, DBUS_TYPE_STRING, &iface, DBUS_TYPE_INVALID);
        DBusPendingCall *pc = NULL;
        registration_t *reg = dbus_malloc(sizeof *reg);
        reg->conn = conn;
        reg->call = dbus_message_ref(msg);
        if (dbus_connection_send_with_reply(conn, get, &pc, 10000) && pc) {
            pending++;
            dbus_pending_call_set_notify(pc, got_properties, reg, free_registration);
            dbus_pending_call_unref(pc);
        } else {
            refuse(conn, msg, "org.bluez.Error.Failed", "Failed to read advertisement properties");
            free_registration(reg);
        }
        dbus_message_unref(get);
        return 1;
    }
    if (dbus_message_has_member(msg, "UnregisterAdvertisement")) {
        ad_t *ad = find_ad(owner, path);
        if (!ad) {
            refuse(conn, msg, "org.bluez.Error.DoesNotExist", "Advertisement not registered");
            return 1;
        }
        char rule[512];
        watch_rule(rule, sizeof rule, ad);
        dbus_bus_remove_match(conn, rule, NULL);
        ad->used = 0;
        DBusMessage *ok = dbus_message_new_method_return(msg);
        dbus_connection_send(conn, ok, NULL);
        dbus_message_unref(ok);
        return 1;
    }
    return 0;
}

void adv_note_signal(DBusConnection *conn, DBusMessage *msg) {
    if (!dbus_message_is_signal(msg, PROPS_IFACE, "PropertiesChanged")) return;
    ad_t *ad = find_ad(dbus_message_get_sender(msg), dbus_message_get_path(msg));
    if (!ad) return;
    adv_changes++;
    // The refresh's TX power, written back as bluetoothd does; its answer is not waited for.
    DBusMessage *set = dbus_message_new_method_call(ad->owner, ad->path, PROPS_IFACE, "Set");
    DBusMessageIter it, v;
    const char *iface = ADV_IFACE, *name = "TxPower";
    int16_t power = 7;
    dbus_message_iter_init_append(set, &it);
    dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &iface);
    dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &name);
    dbus_message_iter_open_container(&it, DBUS_TYPE_VARIANT, "n", &v);
    dbus_message_iter_append_basic(&v, DBUS_TYPE_INT16, &power);
    dbus_message_iter_close_container(&it, &v);
    dbus_message_set_no_reply(set, TRUE);
    dbus_connection_send(conn, set, NULL);
    dbus_message_unref(set);
    adv_tx_power_writes++;
}
