#!/usr/bin/python3
"""beacon_listen.py: what another radio hears of the tally's beacon, frame by frame.

  beacon_listen.py listen hciN LOG
      Takes hciN over the HCI user channel (bluetoothd must have powered it off: `btmgmt --index N
      power off`), scans passively without duplicate filtering (extended scanning when the controller
      has it, legacy otherwise) and writes one line per advertising report that carries a clicker
      frame (manufacturer data 0xFFFF starting CB) to LOG, flushed at once:
          <CLOCK_BOOTTIME s> <address> <type byte hex> <len> <frame hex>
      CLOCK_BOOTTIME is the clock of /proc/uptime, which the scenario's log lines use. Prints
      "LISTENING ext|legacy" once the scan is on; stops on SIGTERM/SIGINT.

  beacon_listen.py gaps LOG FROM TO
      The STATE frames heard between FROM and TO (CLOCK_BOOTTIME seconds) whose phase is "question
      open" (PROTOCOL.md §11.3: status bits 7-6 = 1), and the gaps between consecutive ones, plus the
      first gap after FROM (from FROM to the first STATE heard). Prints one line:
          states N gaps N max S p99 S p50 S over S acks N text N other N ballots N
      and, on following lines, "gap S at T" for each gap over 1 s.

PROTOCOL.md §11.1: the type byte names the frame: 4B/43 STATE, 4C/44 ACKS, 4D/45 TEXT (tagged/signed);
a ballot's byte 1 is 20 or 21.
"""
import ctypes
import os
import select
import signal
import socket
import struct
import sys
import time

AF_BLUETOOTH = 31
BTPROTO_HCI = 1
HCI_CHANNEL_USER = 1

STATE = {0x4B, 0x43}
ACKS = {0x4C, 0x44}
TEXT = {0x4D, 0x45}


def now():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


class Controller:
    def __init__(self, index):
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.socket(AF_BLUETOOTH, socket.SOCK_RAW | socket.SOCK_CLOEXEC, BTPROTO_HCI)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "socket(AF_BLUETOOTH)")
        addr = struct.pack('<HHH', AF_BLUETOOTH, index, HCI_CHANNEL_USER)
        if libc.bind(fd, ctypes.c_char_p(addr), len(addr)) < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise OSError(err, "bind hci%d user channel: %s" % (index, os.strerror(err)))
        self.fd = fd
        self.pending = []   # events read while waiting for a command's completion

    def read_event(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return None
        pkt = os.read(self.fd, 1024)
        t = now()
        if len(pkt) < 3 or pkt[0] != 0x04:
            return (t, None, b'')
        return (t, pkt[1], pkt[3:3 + pkt[2]])

    def command(self, ogf, ocf, params=b''):
        """Sends a command and returns its Command Complete status (or Command Status)."""
        opcode = (ogf << 10) | ocf
        os.write(self.fd, struct.pack('<BHB', 0x01, opcode, len(params)) + params)
        end = now() + 5
        while now() < end:
            ev = self.read_event(end - now())
            if ev is None:
                break
            _, code, p = ev
            if code == 0x0E and len(p) >= 4 and struct.unpack_from('<H', p, 1)[0] == opcode:
                return p[3]
            if code == 0x0F and len(p) >= 4 and struct.unpack_from('<H', p, 2)[0] == opcode:
                return p[0]
            self.pending.append(ev)
        raise TimeoutError("no answer to command 0x%04x" % opcode)


def ad_frames(data):
    """The clicker frames (0xFFFF manufacturer data starting CB) in one advertisement's AD structures."""
    i = 0
    while i < len(data):
        n = data[i]
        if n == 0 or i + 1 + n > len(data):
            return
        if data[i + 1] == 0xFF and n >= 3 and data[i + 2:i + 4] == b'\xff\xff':
            frame = data[i + 4:i + 1 + n]
            if len(frame) >= 2 and frame[0] == 0xCB:
                yield frame
        i += 1 + n


def reports(p):
    """(address, data) of the reports in an LE meta event: 0x02 legacy, 0x0D extended (one report each,
    as btvirt sends them; further reports of a legacy event are laid out the same way)."""
    if not p:
        return
    sub = p[0]
    if sub == 0x02 and len(p) >= 2:
        i = 2
        for _ in range(p[1]):
            if i + 9 > len(p):
                return
            addr = p[i + 2:i + 8]
            n = p[i + 8]
            yield addr, p[i + 9:i + 9 + n]
            i += 9 + n + 1
    elif sub == 0x0D and len(p) >= 2:
        i = 2
        for _ in range(p[1]):
            if i + 24 > len(p):
                return
            addr = p[i + 3:i + 9]
            n = p[i + 23]
            yield addr, p[i + 24:i + 24 + n]
            i += 24 + n


def listen(dev, log):
    index = int(dev.replace('hci', ''))
    c = Controller(index)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    if c.command(0x03, 0x0003) != 0:                                   # Reset
        raise SystemExit("reset refused")
    c.command(0x03, 0x0001, b'\xff' * 8)                                # Set Event Mask: all, LE meta among them
    c.command(0x08, 0x0001, b'\xff' * 8)                                # LE Set Event Mask: all
    # LE Set Extended Scan Parameters: public address, accept all, 1M, passive, interval = window = 10 ms.
    mode = 'ext'
    st = c.command(0x08, 0x0041, struct.pack('<BBBBHH', 0, 0, 0x01, 0, 16, 16))
    if st == 0:
        st = c.command(0x08, 0x0042, struct.pack('<BBHH', 1, 0, 0, 0))  # enable, no duplicate filter
    else:
        mode = 'legacy'
        st = c.command(0x08, 0x000B, struct.pack('<BHHBB', 0, 16, 16, 0, 0))
        if st == 0:
            st = c.command(0x08, 0x000C, struct.pack('<BB', 1, 0))
    if st != 0:
        raise SystemExit("scan refused: status 0x%02x" % st)
    print("LISTENING %s" % mode, flush=True)
    with open(log, 'a', buffering=1) as out:
        while not stop:
            while c.pending:
                handle(c.pending.pop(0), out)
            try:
                ev = c.read_event(0.5)
            except InterruptedError:
                continue
            if ev is not None:
                handle(ev, out)
    try:
        c.command(0x08, 0x0042 if mode == 'ext' else 0x000C,
                  struct.pack('<BBHH', 0, 0, 0, 0) if mode == 'ext' else b'\x00\x00')
    except (OSError, TimeoutError):
        pass
    os.close(c.fd)


def handle(ev, out):
    t, code, p = ev
    if code != 0x3E:
        return
    for addr, data in reports(p):
        a = ':'.join('%02X' % b for b in reversed(addr))
        for f in ad_frames(data):
            out.write('%.6f %s %02x %d %s\n' % (t, a, f[1], len(f), f.hex()))


def percentile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0.0


def gaps(log, t0, t1):
    states, lags, kinds = [], [], {'acks': 0, 'text': 0, 'other': 0, 'ballots': 0}
    for line in open(log):
        f = line.split()
        if len(f) < 5:
            continue
        t, typ, frame = float(f[0]), int(f[2], 16), bytes.fromhex(f[4])
        if not t0 <= t <= t1:
            continue
        if typ in STATE and len(frame) > 9:
            if frame[9] >> 6 == 1:
                states.append(t)
                # The counter (bytes 4-7, 10 ms ticks of the tally's clock) says when the frame was sealed.
                lags.append(t - int.from_bytes(frame[4:8], 'big') / 100)
            else:
                kinds['other'] += 1
        elif typ in ACKS:
            kinds['acks'] += 1
        elif typ in TEXT:
            kinds['text'] += 1
        elif typ in (0x20, 0x21):
            kinds['ballots'] += 1
        else:
            kinds['other'] += 1
    marks = [t0] + states
    g = [(b - a, a) for a, b in zip(marks, marks[1:])]
    if states:
        g.append((t1 - states[-1], states[-1]))   # to the end of the window
    d = [x for x, _ in g]
    print('states %d gaps %d max %.3f p99 %.3f p50 %.3f over %.1f acks %d text %d other %d ballots %d' % (
        len(states), len(d), max(d) if d else t1 - t0, percentile(d, 0.99), percentile(d, 0.5), t1 - t0,
        kinds['acks'], kinds['text'], kinds['other'], kinds['ballots']))
    # How far the air fell behind the tally: the spread of (heard - sealed) over the window's STATE frames.
    print('lag %.3f' % ((max(lags) - min(lags)) if lags else 0))
    for x, a in g:
        if x > 1.0:
            print('gap %.3f at %.3f' % (x, a))


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == 'listen':
        listen(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == 'gaps':
        gaps(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
