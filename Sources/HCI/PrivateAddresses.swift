import ClickerTransport

/// The random device addresses this backend advertises from (Core Specification Vol 6 Part B §1.3.2).
extension DeviceAddress {
    /// A non-resolvable private address: the two most significant bits 0, the other 46 random and
    /// neither all 0 nor all 1, and not `publicAddress` (the controller's own).
    static func nonResolvablePrivate<G: RandomNumberGenerator>(avoiding publicAddress: DeviceAddress,
                                                              using generator: inout G) -> DeviceAddress {
        while true {
            let raw = generator.next() & 0x3FFF_FFFF_FFFF
            if raw != 0, raw != 0x3FFF_FFFF_FFFF, raw != publicAddress.rawValue { return DeviceAddress(rawValue: raw) }
        }
    }

    /// A random static address: the two most significant bits set, the rest random.
    static func randomStatic() -> DeviceAddress {
        var g = SystemRandomNumberGenerator()
        return DeviceAddress(rawValue: g.next() & 0x3FFF_FFFF_FFFF | 0xC000_0000_0000)
    }
}
