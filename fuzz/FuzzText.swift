// libFuzzer target: the text parsers a user or a file feeds the commands (join code, answer,
// enrollment code, device key), compiled with the ClickerWire sources.
// Property: parsing never traps, and whatever parses prints to a text that parses to the same value.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzText(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let c = try? JoinCode(parsing: text), (try? JoinCode(parsing: c.description)) != c { fatalError("join code round trip") }
    if let a = try? Answer(parsing: text), (try? Answer(parsing: a.description)) != a { fatalError("answer round trip") }
    if let e = try? EnrollmentCode(parsing: text), (try? EnrollmentCode(parsing: e.description)) != e {
        fatalError("enrollment code round trip")
    }
    if let k = try? DeviceKey(encoded: text), (try? DeviceKey(encoded: k.encoded)) != k { fatalError("device key round trip") }
    return 0
}
