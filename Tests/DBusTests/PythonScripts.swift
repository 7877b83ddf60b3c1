// Python (Debian python3-dbus + python3-gi) peers used by the tests.

enum PythonScripts {
    /// A service `org.example.PyEcho` at `/echo` (interface `org.example.Echo`). Prints READY once the
    /// name is owned.
    static let echoService = #"""
import os, sys, dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
IFACE = "org.example.Echo"

class Echo(dbus.service.Object):
    held = []

    @dbus.service.method(IFACE)
    def Echo(self, *args):
        return tuple(args)

    @dbus.service.method(IFACE, in_signature="ss")
    def Fail(self, name, message):
        raise dbus.exceptions.DBusException(message, name=name)

    @dbus.service.method(IFACE, async_callbacks=("ok", "err"))
    def Hang(self, ok, err):
        self.Hanging()  # the call has arrived; it is never answered

    @dbus.service.method(IFACE, async_callbacks=("ok", "err"))
    def Hold(self, ok, err):
        self.held.append(ok)
        self.Hanging()  # the call has arrived; Release answers it

    @dbus.service.method(IFACE)
    def Release(self):
        held, self.held = self.held, []
        for ok in held:
            ok()  # the held calls' replies go out before this call's own

    @dbus.service.signal(IFACE, signature="")
    def Hanging(self):
        pass

    @dbus.service.method(IFACE, out_signature="i")
    def WrongType(self):
        return 42

    @dbus.service.method(IFACE)
    def Vanish(self):
        os._exit(3)

    @dbus.service.method(IFACE, out_signature="a{oa{sa{sv}}}")
    def Managed(self):
        return {
            dbus.ObjectPath("/org/bluez/hci0"): {
                "org.bluez.Adapter1": {"Address": dbus.String("00:11:22:33:44:55", variant_level=1),
                                        "Powered": dbus.Boolean(True, variant_level=1)},
            },
            dbus.ObjectPath("/org/bluez/hci0/dev_AA"): {
                "org.bluez.Device1": {"RSSI": dbus.Int16(-60, variant_level=1),
                                       "ManufacturerData": dbus.Dictionary({dbus.UInt16(0xFFFF): dbus.Array([dbus.Byte(1), dbus.Byte(2)], signature="y", variant_level=1)}, signature="qv", variant_level=1)},
            },
        }

    @dbus.service.method(IFACE, in_signature="sui")
    def EmitMany(self, member, count, rssi):
        for i in range(count):
            self.Changed(dbus.String("org.bluez.Device1"),
                         dbus.Dictionary({"RSSI": dbus.Int16(rssi, variant_level=1),
                                          "ManufacturerData": dbus.Dictionary({dbus.UInt16(0xFFFF): dbus.Array([dbus.Byte(i & 255), dbus.Byte(7)], signature="y")}, signature="qv", variant_level=1)}, signature="sv"),
                         dbus.Array([], signature="s"))

    @dbus.service.signal("org.freedesktop.DBus.Properties", signature="sa{sv}as")
    def PropertiesChanged(self, iface, changed, invalidated):
        pass

    def Changed(self, *a):
        self.PropertiesChanged(*a)

name = dbus.service.BusName("org.example.PyEcho", bus)
obj = Echo(bus, "/echo")
print("READY", bus.get_unique_name(), flush=True)
GLib.MainLoop().run()
"""#

    /// Calls a Swift echo object (bus name argv[1], path /echo, interface org.example.Echo, method Echo)
    /// with every type and checks values, types and signatures of the replies. Prints one line per case
    /// and "DONE <ok> <fail>".
    static let echoClient = #"""
import os, sys, dbus
bus = dbus.SessionBus()
obj = bus.get_object(sys.argv[1], "/echo", introspect=False)
echo = obj.get_dbus_method("Echo", "org.example.Echo")

def same(a, b):
    if type(a) != type(b):
        return False
    if getattr(a, "variant_level", 0) != getattr(b, "variant_level", 0):
        return False
    if isinstance(a, dbus.Array):
        return a.signature == b.signature and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dbus.Dictionary):
        return a.signature == b.signature and len(a) == len(b) and all(k in b and same(a[k], b[k]) for k in a)
    if isinstance(a, dbus.Struct):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b

cases = [
    ("y", [dbus.Byte(255)]), ("b", [dbus.Boolean(True)]), ("b", [dbus.Boolean(False)]),
    ("n", [dbus.Int16(-32768)]), ("q", [dbus.UInt16(65535)]),
    ("i", [dbus.Int32(-2147483648)]), ("u", [dbus.UInt32(4294967295)]),
    ("x", [dbus.Int64(-9223372036854775808)]), ("t", [dbus.UInt64(18446744073709551615)]),
    ("d", [dbus.Double(-3.25e-7)]), ("s", [dbus.String("h\u00e9llo \u2713")]), ("s", [dbus.String("")]),
    ("o", [dbus.ObjectPath("/org/bluez/hci0/dev_AA_BB")]), ("g", [dbus.Signature("a{sv}(iu)")]),
    ("ay", [dbus.Array([dbus.Byte(0), dbus.Byte(1), dbus.Byte(255)], signature="y")]),
    ("ay", [dbus.Array([], signature="y")]),
    ("as", [dbus.Array([dbus.String("a"), dbus.String("b")], signature="s")]), ("as", [dbus.Array([], signature="s")]),
    ("ai", [dbus.Array([dbus.Int32(1), dbus.Int32(-1)], signature="i")]),
    ("aas", [dbus.Array([dbus.Array([dbus.String("x")], signature="s"), dbus.Array([], signature="s")], signature="as")]),
    ("a{sv}", [dbus.Dictionary({"a": dbus.Int32(1, variant_level=1), "b": dbus.String("x", variant_level=1)}, signature="sv")]),
    ("a{qv}", [dbus.Dictionary({dbus.UInt16(65535): dbus.Array([dbus.Byte(9)], signature="y", variant_level=1)}, signature="qv")]),
    ("a{oa{sa{sv}}}", [dbus.Dictionary({dbus.ObjectPath("/a"): dbus.Dictionary({"org.x.I": dbus.Dictionary({"P": dbus.UInt32(7, variant_level=1)}, signature="sv")}, signature="sa{sv}")}, signature="oa{sa{sv}}")]),
    ("(isad)", [dbus.Struct((dbus.Int32(1), dbus.String("s"), dbus.Array([dbus.Double(1.5)], signature="d")), signature="isad")]),
    ("a(ii)", [dbus.Array([dbus.Struct((dbus.Int32(1), dbus.Int32(2)), signature="ii")], signature="(ii)")]),
    ("v", [dbus.Int32(5, variant_level=1)]), ("v", [dbus.String("deep", variant_level=2)]),
    ("sib", [dbus.String("a"), dbus.Int32(2), dbus.Boolean(False)]),
]
ok = fail = 0
for sig, args in cases:
    try:
        r = echo(*args, signature=sig)
        got = list(r) if (len(args) > 1) else [r]
        good = len(got) == len(args) and all(same(a, b) for a, b in zip(args, got))
    except Exception as e:
        good = False
        got = repr(e)
    if good:
        ok += 1
        print("OK", sig, flush=True)
    else:
        fail += 1
        print("FAIL", sig, repr(args), repr(got), flush=True)

# Unix fd: the same file must come back.
fd = os.open("/dev/null", os.O_RDONLY)
try:
    r = echo(dbus.types.UnixFd(fd), signature="h")
    back = r.take()
    a, b = os.fstat(fd), os.fstat(back)
    if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
        ok += 1; print("OK h", flush=True)
    else:
        fail += 1; print("FAIL h", flush=True)
    os.close(back)
except Exception as e:
    fail += 1; print("FAIL h", repr(e), flush=True)
print("DONE", ok, fail, flush=True)
"""#
}

extension PythonScripts {
    /// Plays bluetoothd against a Swift GATT application and advertisement exported by argv[1]:
    /// GetManagedObjects on /app, ReadValue on the characteristic, GetAll + Release on /adv.
    static let gattClient = #"""
import sys, dbus
bus = dbus.SessionBus()
owner = sys.argv[1]
om = dbus.Interface(bus.get_object(owner, "/app", introspect=False), "org.freedesktop.DBus.ObjectManager")
objs = om.GetManagedObjects()
for path in sorted(objs):
    for iface in sorted(objs[path]):
        props = objs[path][iface]
        print("OBJ", str(path), str(iface), ",".join(sorted(str(k) for k in props)), flush=True)
ch = objs[dbus.ObjectPath("/app/service0/char0")]["org.bluez.GattCharacteristic1"]
print("CHAR-UUID", str(ch["UUID"]), flush=True)
print("CHAR-SERVICE", str(ch["Service"]), flush=True)
print("CHAR-FLAGS", ",".join(str(f) for f in ch["Flags"]), flush=True)
char = dbus.Interface(bus.get_object(owner, "/app/service0/char0", introspect=False), "org.bluez.GattCharacteristic1")
value = char.ReadValue({"offset": dbus.UInt16(2, variant_level=1)}, byte_arrays=True)
print("READ", bytes(value).hex(), flush=True)
props = dbus.Interface(bus.get_object(owner, "/adv", introspect=False), "org.freedesktop.DBus.Properties")
adv = props.GetAll("org.bluez.LEAdvertisement1")
md = adv["ManufacturerData"]
print("ADV-TYPE", str(adv["Type"]), flush=True)
print("ADV-MD", ",".join("%04x=%s" % (int(k), bytes(bytearray(v)).hex()) for k, v in md.items()), flush=True)
dbus.Interface(bus.get_object(owner, "/adv", introspect=False), "org.bluez.LEAdvertisement1").Release()
print("RELEASED", flush=True)
"""#
}
