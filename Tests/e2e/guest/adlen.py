#!/usr/bin/python3
"""adlen.py N [SECONDARY]: registers on hci0 a broadcast of N bytes of manufacturer data (company
0xFFFF, all zero), with SecondaryChannel SECONDARY when given, unregisters it, and prints
"RESULT N accepted" or "RESULT N refused NAME". The bluez-ad-limits scenario (scenarios.sh) runs it."""
import sys
import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
n = int(sys.argv[1])
secondary = sys.argv[2] if len(sys.argv) > 2 else None


class Advertisement(dbus.service.Object):
    def __init__(self, path):
        self.props = {'Type': 'broadcast',
                      'ManufacturerData': dbus.Dictionary({dbus.UInt16(0xFFFF): dbus.Array([dbus.Byte(0)] * n, signature='y')},
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


manager = dbus.Interface(bus.get_object('org.bluez', '/org/bluez/hci0'), 'org.bluez.LEAdvertisingManager1')
ad = Advertisement('/e2e/adlen%d' % n)
loop = GLib.MainLoop()


def accepted():
    print('RESULT', n, 'accepted', flush=True)
    manager.UnregisterAdvertisement(ad._object_path)
    loop.quit()


def refused(e):
    print('RESULT', n, 'refused', e.get_dbus_name(), flush=True)
    loop.quit()


manager.RegisterAdvertisement(ad._object_path, {}, reply_handler=accepted, error_handler=refused)
GLib.timeout_add(10000, lambda: (print('RESULT', n, 'timeout', flush=True), loop.quit()))
loop.run()
