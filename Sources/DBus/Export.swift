import CDBus
import Synchronization

final class ObjectRegistry: Sendable {
    func handle(_ msg: OpaquePointer, core: ConnectionCore) -> Bool { false }
    func removeAll() {}
}
