#!/usr/bin/python3
"""Guest-side helper for the end-to-end scenarios (runs under Debian's python3 with python3-dbus).

Subcommands:
  prop PATH IFACE NAME          print one org.bluez property (exit 1 when it cannot be read)
  mfr ADAPTER ADDRESS [CID]     print the manufacturer data (hex) that ADAPTER's bluetoothd cache holds
                                for ADDRESS under company ID CID (default 0xffff); empty + exit 1 if none
  json FILE EXPR                evaluate EXPR (Python) over j = the JSON object on FILE's last non-empty
                                line; prints the value; exit 0 only when it is truthy
  observe LOGFILE               log org.bluez signals (devices seen, manufacturer data, connections,
                                adapter properties) with timestamps until killed
  scanpause BTSNOOP INDEX       from a btmon capture: how long each LE connection of controller INDEX
                                stopped its scan (JSON); exit 0 only when the scan came back after each
"""
import json
import sys
import time

import dbus

BLUEZ = 'org.bluez'
PROPS = 'org.freedesktop.DBus.Properties'


def bus():
    return dbus.SystemBus()


def plain(v):
    """dbus-python values -> plain Python (bytes as hex strings)."""
    if isinstance(v, dbus.Array) and v.signature == 'y':
        return bytes(v).hex()
    if isinstance(v, (dbus.Array, list)):
        return [plain(x) for x in v]
    if isinstance(v, (dbus.Dictionary, dict)):
        return {str(plain(k)): plain(x) for k, x in v.items()}
    if isinstance(v, dbus.Boolean):
        return bool(v)
    if isinstance(v, (dbus.Byte, dbus.Int16, dbus.UInt16, dbus.Int32, dbus.UInt32, dbus.Int64, dbus.UInt64)):
        return int(v)
    if isinstance(v, (dbus.String, dbus.ObjectPath)):
        return str(v)
    return v


def get_prop(path, iface, name):
    obj = bus().get_object(BLUEZ, path)
    return plain(dbus.Interface(obj, PROPS).Get(iface, name))


def cmd_prop(args):
    path, iface, name = args
    try:
        v = get_prop(path, iface, name)
    except dbus.DBusException as e:
        print('error: %s' % e.get_dbus_name())
        return 1
    print(json.dumps(v) if not isinstance(v, str) else v)
    return 0


def cmd_mfr(args):
    adapter, address = args[0], args[1]
    cid = str(int(args[2], 0) if len(args) > 2 else 0xffff)
    path = '/org/bluez/%s/dev_%s' % (adapter, address.upper().replace(':', '_'))
    try:
        md = get_prop(path, 'org.bluez.Device1', 'ManufacturerData')
    except dbus.DBusException:
        return 1
    if cid in md:
        print(md[cid])
        return 0
    return 1


def last_json(path):
    with open(path, errors='replace') as f:
        lines = [ln.strip() for ln in f if ln.strip()]
    if not lines:
        raise ValueError('%s is empty' % path)
    return json.loads(lines[-1])


def cmd_json(args):
    path, expr = args
    try:
        j = last_json(path)
    except (OSError, ValueError) as e:
        print('no JSON object on the last line of %s: %s' % (path, e))
        return 1
    try:
        v = eval(expr, {'j': j, 'len': len, 'sum': sum, 'set': set, 'sorted': sorted, 'all': all, 'any': any})
    except Exception as e:  # the expression itself failed (missing key…): that is a failed check
        print('%s: %r' % (type(e).__name__, e))
        return 1
    print(json.dumps(v, sort_keys=True))
    return 0 if v else 1


def cmd_observe(args):
    from gi.repository import GLib
    import dbus.mainloop.glib
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    b = bus()
    out = open(args[0], 'a', buffering=1)
    t0 = time.monotonic()

    def emit(msg):
        out.write('%8.2f %s\n' % (time.monotonic() - t0, msg))

    def where(path):
        parts = str(path).split('/')  # /org/bluez/hci0/dev_XX
        adapter = parts[3] if len(parts) > 3 else '?'
        dev = parts[4][4:].replace('_', ':') if len(parts) > 4 and parts[4].startswith('dev_') else ''
        rest = '/'.join(parts[5:])
        return adapter, dev, rest

    def describe(path, iface, props):
        adapter, dev, rest = where(path)
        for k, v in props.items():
            k = str(k)
            if iface == 'org.bluez.Device1' and k in ('ManufacturerData', 'Connected', 'ServicesResolved', 'RSSI'):
                if k == 'RSSI':
                    continue
                emit('%s %s %s %s=%s' % (adapter, dev or '-', rest, k, json.dumps(plain(v), sort_keys=True)))
            elif iface == 'org.bluez.Adapter1' and k in ('Powered', 'Discovering'):
                emit('%s adapter %s=%s' % (adapter, k, json.dumps(plain(v))))
            elif iface == 'org.bluez.LEAdvertisingManager1' and k == 'ActiveInstances':
                emit('%s adapter ActiveInstances=%s' % (adapter, plain(v)))

    def added(path, ifaces):
        adapter, dev, rest = where(path)
        if 'org.bluez.Device1' in ifaces:
            emit('%s %s added' % (adapter, dev))
            describe(path, 'org.bluez.Device1', ifaces['org.bluez.Device1'])
        elif 'org.bluez.Adapter1' in ifaces:
            emit('%s adapter added' % adapter)
        elif 'org.bluez.GattService1' in ifaces:
            emit('%s %s gatt-service %s uuid=%s' % (adapter, dev, rest, ifaces['org.bluez.GattService1'].get('UUID', '?')))

    def removed(path, ifaces):
        adapter, dev, rest = where(path)
        if 'org.bluez.Device1' in ifaces:
            emit('%s %s removed' % (adapter, dev))
        elif 'org.bluez.Adapter1' in ifaces:
            emit('%s adapter removed' % adapter)

    def changed(iface, props, invalidated, path=None):
        describe(path, str(iface), props)

    def owner(name, old, new):
        if name == BLUEZ:
            emit('bluez owner %s -> %s' % (old or '-', new or '-'))

    b.add_signal_receiver(added, 'InterfacesAdded', 'org.freedesktop.DBus.ObjectManager')
    b.add_signal_receiver(removed, 'InterfacesRemoved', 'org.freedesktop.DBus.ObjectManager')
    b.add_signal_receiver(changed, 'PropertiesChanged', PROPS, path_keyword='path')
    b.add_signal_receiver(owner, 'NameOwnerChanged', 'org.freedesktop.DBus')
    emit('observer up')
    GLib.MainLoop().run()
    return 0


def hci_events(path, index):
    '''Scan on/off, LE connection requests and completions of controller INDEX in a btmon capture (btsnoop,
    monitor format), as (seconds, what).'''
    import struct
    out = []
    with open(path, 'rb') as f:
        f.read(16)
        while True:
            h = f.read(24)
            if len(h) < 24:
                break
            _olen, ilen, flags, _drops, ts = struct.unpack('>IIIIq', h)
            d = f.read(ilen)
            if flags >> 16 != index or len(d) < 4:
                continue
            t, op = ts / 1e6, flags & 0xffff
            if op == 2:  # command: opcode, length, parameters
                opc = struct.unpack('<H', d[:2])[0]
                if opc in (0x200C, 0x2042):  # LE Set (Extended) Scan Enable
                    out.append((t, 'on' if d[3] else 'off'))
                elif opc in (0x200D, 0x2043):  # LE (Extended) Create Connection
                    out.append((t, 'connect'))
            elif op == 3 and d[0] == 0x3E and d[2] in (0x01, 0x0A):  # LE (Enhanced) Connection Complete
                out.append((t, 'connected'))
    return out


def cmd_scanpause(args):
    '''How long each LE connection of controller INDEX stopped its scan: from the end of the scan that ran
    before the connection request (a brief passive scan the kernel runs to find the device is not
    counted as scanning) to the first scan after the connection completed. Fails unless there was a
    connection and the scan came back within 5 s after each.'''
    path, index = args[0], int(args[1])
    ev = hci_events(path, index)
    pauses, ok = [], True
    for i, (t, what) in enumerate(ev):
        if what != 'connect':
            continue
        start = None
        for j in range(i - 1, 0, -1):  # the last scan that ran at least 100 ms, and where it stopped
            if ev[j][1] == 'off' and ev[j - 1][1] == 'on' and ev[j][0] - ev[j - 1][0] >= 0.1:
                start = ev[j][0]
                break
        done = next((tt for tt, w in ev[i:] if w == 'connected'), None)
        back = next((tt for tt, w in ev[i:] if w == 'on' and done is not None and tt >= done), None)
        if start is None or back is None or back - t > 5:
            ok = False
            continue
        pauses.append(round((back - start) * 1000))
    print(json.dumps({'connections': sum(1 for _, w in ev if w == 'connect'), 'scanPausesMs': pauses,
                      'medianMs': sorted(pauses)[len(pauses) // 2] if pauses else None}))
    return 0 if pauses and ok else 1


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cmd = {'prop': cmd_prop, 'mfr': cmd_mfr, 'json': cmd_json, 'observe': cmd_observe,
           'scanpause': cmd_scanpause}.get(sys.argv[1])
    if cmd is None:
        print(__doc__)
        return 2
    return cmd(sys.argv[2:])


if __name__ == '__main__':
    sys.exit(main())
