/// The doctor's report for people: short and plain, one fact a line.
extension DoctorReport {
    public var text: String {
        let f = findings
        let program = f.role == .tally ? "the tally" : "a voter"
        var lines: [String] = []
        lines.append(canRun ? "\(program.prefix(1).uppercased() + program.dropFirst()) can run here."
                            : "\(program.prefix(1).uppercased() + program.dropFirst()) cannot run here:")
        for p in problems { lines.append("  - \(p)") }
        if f.radio == "bluez" {
            lines.append("bluetoothd: \(f.bluetoothd.version ?? "version not known") (\(f.bluetoothd.source))")
        }
        lines.append("access: \(Self.describe(f.access, radio: f.radio))")
        for a in f.adapters {
            let mark = a.name == f.chosen ? " (used)" : ""
            var facts = [a.powered ? "powered" : "powered off"]
            if !a.advertising { facts.append("no advertising") }
            facts.append(a.extendedAdvertising ? "Bluetooth 5 extended advertising" : "legacy advertising only (Bluetooth 4)")
            if let n = a.maxAdvertisingLength { facts.append("MaxAdvLen \(n)") }
            if !a.features.isEmpty { facts.append("features \(a.features.joined(separator: ","))") }
            lines.append("adapter \(a.name)\(a.address.map { " \($0)" } ?? "")\(mark): \(facts.joined(separator: ", "))")
        }
        if f.radio == "bluez", f.chosen != nil || !f.adapters.isEmpty {
            lines.append("broadcast while scanning: \(Self.describe(f.broadcastWhileScanning))")
            lines.append("extended frames: \(Self.describe(f.extendedFrames))")
        }
        if canRun, let reach {
            lines.append("beacon: \(Self.describe(reach, frameLength: f.frameLength))")
            for figure in figures { lines.append("  \(Self.describe(figure))") }
        }
        if let heard = f.tallyHeard {
            let during = f.listenedSeconds.map { " in \(Self.seconds($0)) s" } ?? ""
            lines.append(heard ? "a tally's beacon is heard here" : "no tally's beacon heard\(during)")
        }
        if !advice.isEmpty {
            lines.append("better:")
            for a in advice { lines.append("  - \(a)") }
        }
        return lines.joined(separator: "\n")
    }

    static func describe(_ a: DoctorFindings.Access, radio: String) -> String {
        switch a {
        case .allowed: radio == "hci" ? "CAP_NET_RAW and CAP_NET_ADMIN held" : "org.bluez answers this user"
        case .denied(let why): "refused: \(why)"
        case .unknown: "not known"
        }
    }

    static func describe(_ t: DoctorFindings.Trial) -> String {
        switch t {
        case .worked: "tried, worked"
        case .failed(let why): "tried, refused: \(why)"
        case .notTried(let why): "not tried: \(why)"
        }
    }

    static func describe(_ r: BeaconReach, frameLength: Int?) -> String {
        switch r {
        case .extended: "extended frames of \(frameLength ?? 222) bytes (58 acknowledgements a frame)"
        case .legacy: "legacy frames of 24 bytes (3 acknowledgements a frame)"
        case .off: "off: this radio cannot broadcast while it scans; voters need --question N and nobody sees *counted*"
        }
    }

    static func describe(_ c: CollectionFigure) -> String {
        let room = c.voters >= 1000 ? "\(c.voters / 1000),\(String(c.voters % 1000).leftPadded(3))" : "\(c.voters)"
        var s = "room of \(room): "
        if let t99 = c.seconds99, let t100 = c.seconds100 {
            s += "99 % counted in \(seconds(t99)) s, all in \(seconds(t100)) s"
        } else {
            s += "\(percent(c.countedAtEnd)) % counted after 30 s"
        }
        if let shown = c.shownWithinOneSecond { s += "; \(percent(shown)) % see *counted* within 1 s" }
        return s
    }

    static func seconds(_ v: Double) -> String {
        let hundredths = Int((v * 100).rounded())
        return "\(hundredths / 100).\(String(hundredths % 100).leftPadded(2))"
    }

    static func percent(_ share: Double) -> String {
        let tenths = Int((share * 1000).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
