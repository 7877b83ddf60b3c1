#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport
import Synchronization

// Listening across the socket: the host pushes each report a remote peripheral's receiver hears as an
// unsolicited `report` frame, tagged with the peripheral's stream number.

/// The body of a `report` frame after the request-id-free header: stream u32, companyID u16,
/// address u64, rssi i16 (0x7FFF = none), timestamp ns u64, then the manufacturer data.
enum ListenReportCoding {
    static func encode(stream: UInt32, _ r: AdvertisementReport) -> [UInt8] {
        var w = ByteWriter()
        w.u32(stream)
        w.u16(r.companyID)
        w.u64(r.address.rawValue)
        w.u16(r.rssi.map { UInt16(bitPattern: Int16($0)) } ?? 0x7FFF)
        w.u64(r.timestamp.nanoseconds)
        w.raw(r.data)
        return AirFrame.encode(.report, w.bytes)
    }

    static func decode(_ body: ArraySlice<UInt8>) -> (stream: UInt32, report: AdvertisementReport)? {
        var r = ByteReader(body)
        guard let stream = r.u32(), let company = r.u16(), let address = r.u64(), let rssiRaw = r.u16(),
              let ns = r.u64() else { return nil }
        let rssi: Int8? = rssiRaw == 0x7FFF ? nil : Int8(clamping: Int16(bitPattern: rssiRaw))
        return (stream, AdvertisementReport(address: DeviceAddress(rawValue: address), rssi: rssi, companyID: company,
                                            data: r.rest(), timestamp: RadioInstant(nanoseconds: ns)))
    }
}

/// The host's writing end of one peer's socket, shared by the host thread (replies) and whichever
/// thread runs the air when a report for the peer comes out (reports). The lock keeps frames whole
/// and keeps anybody from writing to the descriptor once the host thread has closed it.
final class PeerWriter: Sendable {
    private let fd: Mutex<Int32?>

    init(fd: Int32) { self.fd = Mutex(fd) }

    /// Sends a whole frame without blocking; false when the socket is closed or full (the host then
    /// drops the peer: a peer that does not read its replies and reports has stopped working).
    func send(_ frame: [UInt8]) -> Bool {
        fd.withLock { fd in
            guard let fd else { return false }
            return UnixSocket.sendAll(fd, frame, flags: Int32(MSG_DONTWAIT))
        }
    }

    /// A report for the peer's stream. A failed send shuts the socket down, which ends the peer
    /// (the host thread sees the end and drops it).
    func sendReport(stream: UInt32, _ report: AdvertisementReport) {
        fd.withLock { fd in
            guard let fd else { return }
            if !UnixSocket.sendAll(fd, ListenReportCoding.encode(stream: stream, report), flags: Int32(MSG_DONTWAIT)) {
                _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
            }
        }
    }

    /// Closes the descriptor; later sends do nothing. Idempotent.
    func close() {
        fd.withLock { fd in
            if let open = fd { Glibc.close(open) }
            fd = nil
        }
    }
}
