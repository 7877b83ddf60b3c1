// bluez-loadgen's LE advertising manager (advertising.c).
#ifndef LOADGEN_ADVERTISING_H
#define LOADGEN_ADVERTISING_H

#include <dbus/dbus.h>

enum { ADV_NONE, ADV_LEGACY, ADV_EXTENDED };

// What the adapter offers a broadcaster: ADV_NONE (no LEAdvertisingManager1, as before), ADV_LEGACY
// (bluetoothd 5.66 on a Bluetooth 5 controller: secondary channels listed, 31 bytes of data at most),
// ADV_EXTENDED (bluetoothd 5.82 with experimental features: MaxAdvLen 251, intervals applied).
extern int adv_mode;
extern unsigned long adv_registrations, adv_refusals, adv_changes, adv_tx_power_writes;

// The LEAdvertisingManager1 entry of the adapter in GetManagedObjects (nothing with ADV_NONE).
void adv_append_manager_interface(DBusMessageIter *ifaces);
// Its properties, for Properties.GetAll("org.bluez.LEAdvertisingManager1").
void adv_append_manager_props(DBusMessageIter *props);
// RegisterAdvertisement / UnregisterAdvertisement on the adapter: 1 if `msg` was one (and is answered).
int adv_handle_call(DBusConnection *conn, DBusMessage *msg);
// A signal that reached the generator: a registered advertisement's PropertiesChanged is applied as
// bluetoothd applies it (counted, and TxPower written back).
void adv_note_signal(DBusConnection *conn, DBusMessage *msg);

#endif
