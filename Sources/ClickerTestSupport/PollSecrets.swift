import ClickerWire
import Synchronization

/// S per join code, derived once per test process: scrypt is deliberately slow, and slower still
/// in a debug build (BoringSSL compiled without optimisation).
private let derivedSecrets = Mutex<[JoinCode: PollSecret]>([:])

public func pollSecret(_ code: JoinCode) -> PollSecret {
    if let s = derivedSecrets.withLock({ $0[code] }) { return s }
    let s = PollSecret(deriving: code)
    derivedSecrets.withLock { $0[code] = s }
    return s
}
