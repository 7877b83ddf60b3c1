import ClickerTransport

/// The simulator as seen by a script action. Valid only during the action; do not keep it.
public struct SimulationContext {
    let core: AirCore

    /// The current virtual instant.
    public var now: RadioInstant { RadioInstant(nanoseconds: core.now) }
    public var statistics: AirStatistics { core.stats }

    /// Adds a device (or brings a departed one back). Returns its address.
    @discardableResult
    public func addDevice(address: DeviceAddress? = nil, rssi: Double? = nil) -> DeviceAddress {
        core.addDevice(address: address, rssi: rssi).address
    }

    /// Starts or replaces `address`'s advertising (a new payload takes effect at its next event).
    public func advertise(_ address: DeviceAddress, _ payload: AdvertisingPayload) throws {
        try core.advertise(core.addDevice(address: address, rssi: nil), payload)
    }

    public func stopAdvertising(_ address: DeviceAddress) {
        if let d = core.device(address) { core.stopAdvertising(d) }
    }

    /// The device leaves: advertising and GATT vanish, reads in progress fail.
    public func remove(_ address: DeviceAddress) {
        if let d = core.device(address) { core.remove(d) }
    }

    /// Moves the device (changes its received signal strength, dBm). In a hall a device's links follow
    /// from its seat, and this changes nothing.
    public func setRSSI(_ address: DeviceAddress, _ dBm: Double) {
        core.device(address)?.rssi = sanitizedRSSI(dBm)
    }

    public func publish(_ address: DeviceAddress, service: UUID128, characteristic: UUID128, value: [UInt8]) {
        core.device(address)?.gatt[GATTKey(service: service, characteristic: characteristic)] = value
    }

    /// Starts or replaces the broadcast of the air's first central.
    public func broadcast(_ payload: BroadcastPayload) throws { try core.startBroadcast(payload, at: core.stations[0]) }

    public func stopBroadcasting() { core.stopBroadcast(at: core.stations[0]) }

    /// Schedules another action `delay` after now.
    public func schedule(after delay: Duration, _ action: @escaping ScriptAction) {
        core.schedule(.script(action), at: core.now.adding(delay.clampedNanoseconds))
    }
}
