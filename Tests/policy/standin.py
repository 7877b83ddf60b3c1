#!/usr/bin/python3
"""Test helper for Tests/policy/run.sh (Debian python3-dbus + python3-gi, run with /usr/bin/python3).

Modes (bus address in $BUS):
  serve NAME            own NAME, export a stand-in org.clicker.Tally1 (or org.bluez) object, print READY
  own NAME              try to own NAME; exit 0 if owned, 3 if access denied, 1 otherwise
  call DEST PATH IFACE METHOD   call a method; print the reply; exit 0, 3 if access denied, 1 otherwise
  listen SECONDS        subscribe to signals of org.clicker.Tally1, print READY, then the number received
"""
import sys
import dbus
import dbus.service
import dbus.mainloop.glib
from gi.repository import GLib

ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"


def bus():
    import os
    return dbus.bus.BusConnection(os.environ["BUS"])


class Tally(dbus.service.Object):
    """Stand-in for the daemon's control interface; the real daemon replaces it at integration."""

    def __init__(self, conn):
        super().__init__(conn, "/org/clicker/Tally1")
        self.question = 0
        self.open = False

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="u")
    def OpenQuestion(self):
        if self.question == 0:
            self.question = 1
        self.open = True
        self.QuestionChanged(self.question, True)
        return self.question

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="b")
    def CloseQuestion(self):
        was = self.open
        self.open = False
        self.QuestionChanged(self.question, False)
        return was

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="u")
    def NextQuestion(self):
        self.question += 1
        self.open = True
        self.QuestionChanged(self.question, True)
        return self.question

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="q")
    def NewPoll(self):
        self.question = 1
        self.open = True
        return 4821

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="s")
    def JoinCode(self):
        return "4821-K7QXM-3PF9A"

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="s")
    def Status(self):
        return "question=%d open=%s" % (self.question, self.open)

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="s")
    def Results(self):
        return '{"A": 1, "B": 0, "C": 0, "D": 0}'

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="s")
    def Export(self):
        return "/var/lib/clicker/poll-1.json"

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="")
    def ShowCounts(self):
        pass

    @dbus.service.method("org.clicker.Tally1", in_signature="", out_signature="as")
    def DumpVoters(self):
        """Not a control method: the policy must not let anyone call it."""
        return ["voter-0001:A"]

    @dbus.service.signal("org.clicker.Tally1", signature="ub")
    def QuestionChanged(self, number, is_open):
        pass


class BlueZ(dbus.service.Object):
    def __init__(self, conn):
        super().__init__(conn, "/org/bluez")

    @dbus.service.method("org.bluez.AgentManager1", in_signature="", out_signature="s")
    def Ping(self):
        return "pong"


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    mode = sys.argv[1]
    try:
        conn = bus()
        if mode == "serve":
            name = sys.argv[2]
            owned = dbus.service.BusName(name, conn, do_not_queue=True)  # released when collected: keep it
            obj = Tally(conn) if name == "org.clicker.Tally1" else BlueZ(conn)
            print("READY", flush=True)
            GLib.MainLoop().run()
            del obj, owned
        elif mode == "own":
            r = conn.request_name(sys.argv[2], dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
            print("owned" if r == dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER else "not-owned:%d" % r, flush=True)
            return 0 if r == dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER else 1
        elif mode == "call":
            dest, path, iface, method = sys.argv[2:6]
            reply = conn.call_blocking(dest, path, iface, method, "", [], timeout=5)
            print(repr(reply), flush=True)
        elif mode == "listen":
            count = [0]
            conn.add_signal_receiver(lambda *a: count.__setitem__(0, count[0] + 1),
                                     dbus_interface="org.clicker.Tally1", bus_name="org.clicker.Tally1")
            conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetId", "", [])  # the match rule is installed once this returns
            print("READY", flush=True)
            loop = GLib.MainLoop()
            GLib.timeout_add(int(float(sys.argv[2]) * 1000), loop.quit)
            loop.run()
            print("SIGNALS %d" % count[0], flush=True)
        else:
            print("unknown mode", mode, file=sys.stderr)
            return 2
    except dbus.exceptions.DBusException as e:
        print("ERROR %s: %s" % (e.get_dbus_name(), e.get_dbus_message()), flush=True)
        return 3 if e.get_dbus_name() == ACCESS_DENIED else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
