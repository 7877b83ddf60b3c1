import ClickerTransport

// An attacker's radio: a device of the air that hears what is on it, the central's broadcast (the
// tally's beacon) and every device's advertisements (the voters' ballots), and whose advertisements
// every listener hears (the followers) as well as the central's scanners. Its PDUs are ordinary
// legacy advertising PDUs with their airtime, on the three primary channels at its interval; they
// collide with everyone's and its receiver is deaf while it transmits, as any device's.
//
// Power: without a hall the simulator knows one path loss per device, to the central. A listener hears
// the attacker at its own `rssi` (the attacker sits by the central, the strongest place for it), and
// the attacker hears a device at that device's `rssi`. In a hall the attacker takes a seat like any
// device and every link has its own loss (PathLoss.swift).

extension AirCore {
    /// Makes `dev` an attacker's radio (it stays one until the air ends).
    func makeAttacker(_ dev: Device) {
        guard !dev.attacker else { return }
        dev.attacker = true
        attackers.append(dev.index)
        attackers.sort()
    }

    /// A device's PDU has ended: an attacker's reaches every other listening device; anyone else's
    /// reaches the listening attackers.
    func endPDUAtListeners(_ tx: Transmission) {
        let sender = devices[tx.device]
        for d in sender.attacker ? listeningDevices : attackers where d != tx.device {
            let dev = devices[d]
            guard hears(dev, tx) else { continue }
            if sender.attacker { stats.attackerPDUsHeard += 1 }
            deliverToListener(tx.pdu, from: sender.address, rssi: power(of: tx, at: .device(d)), to: dev, at: tx.end)
        }
    }
}

extension SimulatedAir {
    /// Adds an attacker's radio: a peripheral whose `listen` hears the central's broadcast and every
    /// device's advertisements, and whose `advertise` (non-connectable, legacy: 27 bytes of
    /// manufacturer data) every listening device hears, besides the central's scanners.
    public func addAttacker(address: DeviceAddress? = nil, rssi: Double? = nil) -> SimulatedPeripheral {
        let a = withCore { c in
            let d = c.addDevice(address: address, rssi: rssi)
            c.makeAttacker(d)
            return d.address
        }
        return SimulatedPeripheral(air: self, address: a)
    }

    /// Joins the air hosted at `path` as an attacker's radio (see ``addAttacker(address:rssi:)``).
    public static func connectAttacker(path: String = SimulatedAir.defaultSocketPath, address: DeviceAddress? = nil,
                                       rssi: Double? = nil) async throws -> RemotePeripheral {
        let p = try await RemotePeripheral.connect(path: path, address: address, rssi: rssi)
        do {
            try await p.becomeAttacker()
        } catch {
            await p.shutdown()
            throw error
        }
        return p
    }
}
