import ClickerDoctor
import ClickerTransport
import DBus
import Logging

/// What the doctor learns through bluetoothd: its version, whether this user may call it, the adapters,
/// and, on the adapter the tally or voter would use, what it tries: a broadcast while the adapter scans
/// (a legacy frame of ``BlueZBeacon/probeFrame(length:)``, which no follower takes for a frame), the
/// beacon's extended-frame probe (tally), and listening for a tally's beacon (voter). Facts only: the
/// report (``DoctorReport``) concludes.
public enum BlueZDoctor {
    public struct Options: Sendable {
        public var bus: DBusBusTarget
        public var adapter: AdapterSelection
        public var role: DoctorFindings.Role
        /// How long to wait for discovery to start, and (voter) to listen for a tally's beacon.
        public var listen: Duration
        public var callTimeout: Duration
        /// Whether manufacturer data (after the company ID) is a tally's beacon frame.
        public var isBeacon: @Sendable ([UInt8]) -> Bool
        /// The doctor's one clock: its waits (for discovery, for a beacon), its calls' timeouts and the
        /// central it tries run on it (the continuous clock by default; tests move a clock of their own).
        public var clock: RadioClock

        public init(bus: DBusBusTarget = .system, adapter: AdapterSelection = .firstPowered, role: DoctorFindings.Role,
                    listen: Duration = .seconds(6), callTimeout: Duration = .seconds(10),
                    isBeacon: @escaping @Sendable ([UInt8]) -> Bool = { _ in false }, clock: RadioClock = RadioClock()) {
            self.bus = bus
            self.adapter = adapter
            self.role = role
            self.listen = listen
            self.callTimeout = callTimeout
            self.isBeacon = isBeacon
            self.clock = clock
        }
    }

    /// The company ID the beacon and the probe broadcast under (PROTOCOL.md §1).
    static let companyID: UInt16 = 0xFFFF

    public static func examine(_ o: Options, logger: Logger = Logger(label: "clicker.doctor")) async -> DoctorFindings {
        var f = DoctorFindings(role: o.role, radio: "bluez")
        let conn: DBusConnection
        do {
            conn = try await DBusConnection.connect(o.bus, clock: o.clock.elapsed)
        } catch {
            f.unreachable = BlueZError.busUnreachable(o.bus.spokenName, "\(error)").description
            f.bluetoothd = await DaemonVersion.find(nil, timeout: o.callTimeout)
            return f
        }
        defer { conn.close() }
        f.bluetoothd = await DaemonVersion.find(conn, timeout: o.callTimeout)
        let mirror: ObjectMirror
        do {
            mirror = try await conn.call(ObjectMirror.self, destination: BlueZ.service, path: BlueZ.root,
                                         interface: BlueZ.objectManager, method: "GetManagedObjects", timeout: o.callTimeout)
        } catch let e as DBusError where e.name == DBusError.accessDenied {
            f.access = .denied("\(e.name): \(e.message)")
            return f
        } catch let e as DBusError where e.meansBluetoothdGone {
            f.unreachable = BlueZError.bluetoothdNotRunning.description
            return f
        } catch {
            f.unreachable = "BlueZ did not answer GetManagedObjects: \(error)"
            return f
        }
        f.access = .allowed
        f.adapters = mirror.adapters().map { adapter(mirror, $0) }
        guard let chosen = mirror.adapter(matching: o.adapter) else {
            f.notChosen = BlueZError.noAdapter(o.adapter.description, f.adapters.map(\.name)).description
            return f
        }
        f.chosen = chosen.name
        guard chosen.powered else {
            f.broadcastWhileScanning = .notTried("adapter \(chosen.name) is powered off")
            f.extendedFrames = .notTried("adapter \(chosen.name) is powered off")
            return f
        }
        guard f.adapters.first(where: { $0.name == chosen.name })?.advertising == true else {
            f.broadcastWhileScanning = .notTried(BlueZError.advertisingUnsupported(chosen.name).description)
            f.extendedFrames = .notTried(BlueZError.advertisingUnsupported(chosen.name).description)
            return f
        }
        await tryRadio(o, adapter: chosen.name, findings: &f, logger: logger)
        return f
    }

    static func adapter(_ mirror: ObjectMirror, _ a: BlueZ.Adapter) -> DoctorFindings.Adapter {
        let manager = mirror.properties(a.path, BlueZ.advertisingManager)
        func strings(_ name: String) -> [String] {
            guard case .array(_, let items)? = manager?[name]?.unwrapped else { return [] }
            return items.compactMap { if case .string(let s) = $0.unwrapped { s } else { nil } }
        }
        var maxLength: Int?
        if case .dictionary(_, _, let entries)? = manager?["SupportedCapabilities"]?.unwrapped,
           let e = entries.first(where: { $0.key.unwrapped == .string("MaxAdvLen") }), case .byte(let n) = e.value.unwrapped {
            maxLength = Int(n)
        }
        return DoctorFindings.Adapter(name: a.name, address: a.address?.description, powered: a.powered,
                                      extendedAdvertising: !strings("SupportedSecondaryChannels").isEmpty,
                                      maxAdvertisingLength: maxLength, features: strings("SupportedFeatures"),
                                      advertising: manager != nil)
    }

    /// Scans on `name` and, while it does, broadcasts a probe frame; the tally then probes extended frames,
    /// the voter listens for a beacon.
    static func tryRadio(_ o: Options, adapter name: String, findings f: inout DoctorFindings, logger: Logger) async {
        var centralOptions = BlueZCentralOptions(bus: o.bus, adapter: .name(name), discoveryRestartInterval: nil,
                                                 callTimeout: o.callTimeout)
        centralOptions.clock = o.clock
        let central = BlueZCentral(options: centralOptions, logger: logger)
        let clock = o.clock
        let isBeacon = o.isBeacon
        let reports = central.advertisements(companyID: companyID)
        // An element once a beacon frame is heard (kept until the listening phase asks); the reports are
        // read to the end, so the scan goes on while the broadcast is tried.
        let (heard, beaconHeard) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let listening = Task {
            do {
                for try await r in reports where isBeacon(r.data) { beaconHeard.yield() }
            } catch {}
            beaconHeard.finish()
        }
        let scanning = await waitForScanning(central, within: o.listen, on: clock)
        let startedListening = clock.now
        if let problem = scanning {
            f.broadcastWhileScanning = .failed("discovery did not start: \(problem)")
        } else {
            do {
                try await central.broadcast(BroadcastPayload(companyID: companyID,
                                                             frames: [BlueZBeacon.probeFrame(length: BlueZBeacon.legacyFrameLength)]))
                f.broadcastWhileScanning = .worked
            } catch {
                f.broadcastWhileScanning = .failed("\(error)")
                if case BlueZError.rejected(_, let e) = error, e.name == DBusError.accessDenied { f.access = .denied("\(e.name): \(e.message)") }
            }
            try? await central.stopBroadcasting()
        }
        switch o.role {
        case .tally:
            let adapter = f.adapters.first { $0.name == name }
            if adapter?.extendedAdvertising != true {
                f.extendedFrames = .notTried("the controller has no LE Extended Advertising (bluetoothd lists no SupportedSecondaryChannels)")
                f.frameLength = f.broadcastWhileScanning.worked ? BlueZBeacon.legacyFrameLength : nil
            } else {
                let asked = min(BlueZBeacon.singleReportFrameLength, (adapter?.maxAdvertisingLength ?? 251) - BlueZBeacon.extendedOverhead)
                do {
                    let caps = try await central.broadcastCapabilities()
                    f.extendedFrames = caps.extended ? .worked
                        : .failed("bluetoothd refused a \(asked)-byte extended frame (BlueZ before 5.69 caps advertising data at 31 bytes)")
                    f.frameLength = caps.extended ? caps.maxFrameLength : BlueZBeacon.legacyFrameLength
                } catch {
                    f.extendedFrames = .failed("\(error)")
                }
            }
        case .vote:
            f.extendedFrames = .notTried("a voter sends legacy frames only")
            if scanning == nil {
                f.tallyHeard = await firstBeacon(heard, before: startedListening + o.listen, on: clock)
                let listened = clock.now - startedListening
                f.listenedSeconds = Double(listened.components.seconds) + Double(listened.components.attoseconds) / 1e18
            }
        }
        listening.cancel()
        await central.shutdown()
    }

    /// Whether `heard` yields before `deadline` on `clock` (a stream that ends unheard waits for the deadline).
    static func firstBeacon(_ heard: AsyncStream<Void>, before deadline: RadioInstant, on clock: RadioClock) async -> Bool {
        await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                for await _ in heard { return true }
                return nil
            }
            group.addTask {
                try? await clock.sleep(until: deadline)
                return false
            }
            var result = false
            while let next = await group.next() {
                if let next { result = next; break }
            }
            group.cancelAll()
            return result
        }
    }

    /// nil once the central reports scanning; else its last problem after `limit` on `clock`.
    static func waitForScanning(_ central: BlueZCentral, within limit: Duration, on clock: RadioClock) async -> String? {
        let statuses = central.status()
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                var last = "no status"
                for await s in statuses {
                    if s.state == .scanning || s.state == .advertising { return nil }
                    last = s.lastError ?? "\(s.state)"
                }
                return last
            }
            group.addTask {
                try? await clock.sleep(for: max(limit, .seconds(2)))
                return "not scanning after \(max(limit, .seconds(2)))"
            }
            let first = await group.next() ?? "no status"
            group.cancelAll()
            return first
        }
    }
}

