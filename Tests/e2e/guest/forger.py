#!/usr/bin/python3
"""forger.py ADAPTER JOIN-CODE SECONDS [SECONDARY]: a classmate's radio that holds the join code.

Discovers on ADAPTER through bluetoothd and reads the tally's STATE frames from the Device1
ManufacturerData of company 0xFFFF (frames starting CB 4B, tagged, or CB 43, signed; checked with the
join code's beacon key, docs/vectors.py). From the newest counter heard it seals tagged STATE frames
"question 9, multi-select, 3 options, open" with the join code, their counters 1 to 4 s (100 to 400
ticks of 10 ms) ahead of the tally's, and broadcasts them from ADAPTER for SECONDS: one broadcast
advertisement (SecondaryChannel SECONDARY, extended advertising, when given) whose ManufacturerData
changes to a new frame every 0.5 s. Prints one line per event:
  HEARD counter C question Q signed yes|no   (the first tally STATE, then every 20th)
  FORGED counter C ahead A accepted|refused NAME|changed
  RESULT heard H forged F registered K refused R   (last line; F frames sealed)
The beacon-forger scenario (scenarios.sh) runs it."""
import sys
import time
import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

sys.path.insert(0, '/e2e')
import vectors  # noqa: E402  (docs/vectors.py, copied into the guest by run.sh)

adapter, code, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
secondary = sys.argv[4] if len(sys.argv) > 4 else None
vid, _ = vectors.parse_join(code)
vectors.beacon_km(code)   # the scrypt, once, before listening (seconds under TCG)
print('READY key derived', flush=True)

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
root = '/org/bluez/' + adapter
adapter_obj = bus.get_object('org.bluez', root)
props = dbus.Interface(adapter_obj, 'org.freedesktop.DBus.Properties')
disc = dbus.Interface(adapter_obj, 'org.bluez.Adapter1')
manager = dbus.Interface(adapter_obj, 'org.bluez.LEAdvertisingManager1')
loop = GLib.MainLoop()

heard = {'n': 0, 'counter': None, 'at': None}
stats = {'forged': 0, 'accepted': 0, 'refused': 0, 'started': None}


def take(data):
    p = bytes(data)
    if len(p) < 2 or p[0] != 0xCB or p[1] not in (0x4B, 0x43):
        return
    got = vectors.open_beacon(p, code)
    if not isinstance(got, tuple) or got[0] != 'state':
        return
    if heard['counter'] is None or got[1] > heard['counter']:
        heard['counter'], heard['at'] = got[1], time.monotonic()
    if heard['n'] % 20 == 0:
        print('HEARD counter %d question %d signed %s' % (got[1], got[4], 'yes' if p[1] == 0x43 else 'no'), flush=True)
    heard['n'] += 1


def manufacturer(values):
    md = values.get('ManufacturerData')
    if md is not None and 0xFFFF in md:
        take(md[0xFFFF])


def on_changed(interface, changed, invalidated, path=None):
    if interface == 'org.bluez.Device1' and path and path.startswith(root + '/'):
        manufacturer(changed)


def on_added(path, interfaces):
    if path.startswith(root + '/') and 'org.bluez.Device1' in interfaces:
        manufacturer(interfaces['org.bluez.Device1'])


bus.add_signal_receiver(on_changed, dbus_interface='org.freedesktop.DBus.Properties', signal_name='PropertiesChanged',
                        bus_name='org.bluez', path_keyword='path')
bus.add_signal_receiver(on_added, dbus_interface='org.freedesktop.DBus.ObjectManager', signal_name='InterfacesAdded',
                        bus_name='org.bluez')


class Advertisement(dbus.service.Object):
    def __init__(self, path, frame):
        self.props = {'Type': 'broadcast',
                      'ManufacturerData': dbus.Dictionary({dbus.UInt16(0xFFFF): dbus.Array([dbus.Byte(b) for b in frame], signature='y')},
                                                          signature='qv')}
        if secondary:
            self.props['SecondaryChannel'] = secondary
        dbus.service.Object.__init__(self, bus, path)

    @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface):
        return self.props

    @dbus.service.method('org.bluez.LEAdvertisement1', in_signature='', out_signature='')
    def Release(self):
        pass

    @dbus.service.signal('org.freedesktop.DBus.Properties', signature='sa{sv}as')
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def set_frame(self, frame):
        md = dbus.Dictionary({dbus.UInt16(0xFFFF): dbus.Array([dbus.Byte(b) for b in frame], signature='y')}, signature='qv')
        self.props['ManufacturerData'] = md
        self.PropertiesChanged('org.bluez.LEAdvertisement1', {'ManufacturerData': md}, [])


current = {'ad': None, 'busy': False, 'since': 0.0, 'late': False}
AHEAD = [100, 200, 300, 400]   # ticks of 10 ms ahead of the tally's counter


def next_frame():
    k = stats['forged']
    ahead = AHEAD[k % len(AHEAD)]
    counter = heard['counter'] + int((time.monotonic() - heard['at']) * 100) + ahead
    stats['forged'] += 1
    return counter, ahead, vectors.seal_state(code, counter, 'anonymous', 'open', 9, 'multi', 3, 100, None)


def forge():
    # One broadcast registered once; its ManufacturerData changes every 0.5 s (PropertiesChanged), which
    # bluetoothd follows by setting the new data (as it does for the tally's beacon). Registering anew
    # each time cost bluetoothd seconds per frame under TCG.
    now = time.monotonic()
    if now - stats['started'] >= seconds:
        # bluetoothd 5.66 died (its log: "Refreshing advertisement data:" with a freed client's path) when
        # this client went away while the refresh of its last change was still under way: leave the last
        # frame 10 s (3 s were not enough for 5.82 under TCG), unregister, and exit only when bluetoothd has answered.
        GLib.timeout_add(10000, lambda: drop_current(then=finish) and False)
        return False
    if current['busy']:
        if now - current['since'] > 5 and not current['late']:
            current['late'] = True
            print('REGISTER no reply after 5 s', flush=True)
        return True
    if current['ad'] is not None:
        counter, ahead, frame = next_frame()
        current['ad'].set_frame(frame)
        print('FORGED counter %d ahead %d changed' % (counter, ahead), flush=True)
        return True
    counter, ahead, frame = next_frame()
    ad = Advertisement('/e2e/forger%d' % stats['forged'], frame)
    current['busy'], current['since'] = True, now

    def accepted():
        current['ad'], current['busy'] = ad, False
        stats['accepted'] += 1
        print('FORGED counter %d ahead %d accepted' % (counter, ahead), flush=True)

    def refused(e):
        current['busy'] = False
        ad.remove_from_connection()
        stats['refused'] += 1
        print('FORGED counter %d ahead %d refused %s %s' % (counter, ahead, e.get_dbus_name(), e.get_dbus_message()),
              flush=True)

    manager.RegisterAdvertisement(ad._object_path, {}, reply_handler=accepted, error_handler=refused)
    return True


# Every call to bluetoothd is asynchronous: a blocking call here held this loop for seconds under TCG,
# and the replies it held back were never handled.
def ignore(*args):
    pass


def drop_current(then=ignore):
    ad = current['ad']
    if ad is None:
        then()
        return

    def done():
        ad.remove_from_connection()
        then()

    def failed(e):
        print('UNREGISTER failed', e.get_dbus_name(), flush=True)
        then()
    current['ad'] = None
    manager.UnregisterAdvertisement(ad._object_path, reply_handler=done, error_handler=failed)


def finish():
    print('RESULT heard %d forged %d registered %d refused %d' % (heard['n'], stats['forged'], stats['accepted'], stats['refused']),
          flush=True)
    loop.quit()


def restart_discovery():
    if stats['started'] is not None:   # forging: the counter runs on from the last one heard
        disc.StopDiscovery(reply_handler=ignore, error_handler=ignore)
        return False
    # btvirt reports an advertisement when scanning or advertising is switched on: restarting the scan
    # brings the tally's current frame again.
    def start(*args):
        disc.StartDiscovery(reply_handler=ignore, error_handler=ignore)
    disc.StopDiscovery(reply_handler=start, error_handler=start)
    return True


def wait_for_tally():
    if heard['counter'] is None:
        return True
    stats['started'] = time.monotonic()
    print('FORGING for %g s from the tally counter %d' % (seconds, heard['counter']), flush=True)
    GLib.timeout_add(500, forge)
    forge()
    return False


def give_up():
    if heard['counter'] is None:
        print('RESULT heard 0 forged 0 registered 0 refused 0 (no tally STATE heard)', flush=True)
        loop.quit()
    return False


disc.SetDiscoveryFilter({'Transport': 'le', 'DuplicateData': dbus.Boolean(True)})
disc.StartDiscovery()
for path, ifaces in dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager').GetManagedObjects().items():
    on_added(path, ifaces)
GLib.timeout_add(2000, restart_discovery)
GLib.timeout_add(200, wait_for_tally)
GLib.timeout_add(120000, give_up)
loop.run()
