import ClickerTransport
import DBus

/// The GATT client: connect, wait for the services, read one characteristic, disconnect.
///
/// Every wait is on events, as bleak's: the read parks until the mirror changes at or below the
/// device (InterfacesAdded of the GATT objects, PropertiesChanged of Connected and ServicesResolved)
/// or the session changes, and looks again. The read's own deadline is its only clock.
extension CentralEngine {
    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        let deadline = options.clock.now + timeout
        ensureRunning()
        let (conn, adapter) = try await waitForMirror(
            .bluetoothd, scope: nil, until: deadline,
            expired: { TransportError.timeout("waiting for bluetoothd before reading \(device)") }
        ) { s -> (DBusConnection, DBusObjectPath)? in
            if s.shutDown { throw CancellationError() }
            if let startup = s.startupError, s.connection == nil { throw startup }
            guard let c = s.connection, let a = s.adapterPath, s.ready else { return nil }
            return (c, a)
        }
        guard try await slots.acquire(before: deadline, on: options.clock) else {
            throw TransportError.timeout("waiting for a free connection slot to \(device)")
        }
        defer { slots.release() }
        state.withLock { s in
            s.readsInProgress += 1
            s.stats.peakConcurrentReads = max(s.stats.peakConcurrentReads, s.readsInProgress)
        }
        defer { state.withLock { $0.readsInProgress -= 1 } }
        // A read that waited for a slot while its caller went away (shutdown) makes no connection.
        try Task.checkCancellation()
        guard let path = state.withLock({ $0.mirror.devicePath(adapter: adapter, address: device) }) else {
            throw TransportError.notConnected(device)
        }
        state.withLock { $0.busy[path, default: 0] += 1 }
        defer { state.withLock { s in
            if let n = s.busy[path], n > 1 { s.busy[path] = n - 1 } else { s.busy[path] = nil }
        } }
        do {
            let value = try await connectAndRead(conn, path, device, service, characteristic, deadline)
            await disconnect(conn, path)
            return value
        } catch {
            await disconnect(conn, path)
            throw error
        }
    }

    private func connectAndRead(_ conn: DBusConnection, _ path: DBusObjectPath, _ device: DeviceAddress,
                                _ service: UUID128, _ characteristic: UUID128,
                                _ deadline: RadioInstant) async throws -> [UInt8] {
        func remaining(_ what: String) throws -> Duration {
            let left = deadline - options.clock.now
            if left <= .zero { throw TransportError.timeout("\(what) \(device)") }
            return left
        }
        // Always Connect: BlueZ answers at once when already connected, and the mirror may lag behind.
        do {
            _ = try await conn.call(destination: BlueZ.service, path: path, interface: BlueZ.device,
                                    method: "Connect", timeout: try remaining("connecting to"))
        } catch let e as DBusError {
            if e.isTimeout { throw TransportError.timeout("connecting to \(device)") }
            if e.name != "org.bluez.Error.AlreadyConnected" {
                logger.debug("Connect \(device): \(e)")
                throw TransportError.notConnected(device)
            }
        }
        // Services resolved. The mirror may still show the Connected of before our Connect: a device is
        // lost only once it was seen connected and then not.
        var seenConnected = false
        try await waitForMirror(
            .servicesResolved, scope: path, until: deadline,
            expired: { TransportError.timeout("resolving GATT services of \(device)") }
        ) { s -> Void? in
            guard s.mirror.properties(path, BlueZ.device) != nil else { throw TransportError.notConnected(device) }
            if s.mirror.bool(path, BlueZ.device, "ServicesResolved") == true { return () }
            let connected = s.mirror.bool(path, BlueZ.device, "Connected") == true
            if connected { seenConnected = true }
            if seenConnected && !connected { throw TransportError.notConnected(device) }
            return nil
        }
        // bluetoothd may set ServicesResolved before the InterfacesAdded of the GATT objects reach us
        // (seen on bluez 5.66): wait for them until the read's deadline. A device that never offers the
        // characteristic fails as such, not as a timeout. The link counts as lost when ServicesResolved
        // turns false (bluetoothd's first word when a link drops), not on Connected: in the QEMU guest
        // bluetoothd 5.66 resolved the services of a link whose Connected never turned true, and a check
        // on Connected gave up on it twice in a row before a third connection read the ballot.
        let charPath = try await waitForMirror(
            .characteristic, scope: path, until: deadline,
            expired: { TransportError.characteristicNotFound(characteristic) }
        ) { s -> DBusObjectPath? in
            guard s.mirror.bool(path, BlueZ.device, "ServicesResolved") != false else { throw TransportError.notConnected(device) }
            return s.mirror.characteristicPath(device: path, service: service, characteristic: characteristic)
        }
        // The value as read, unmodified. ReadValue's own errors are reported as BlueZ gives them.
        do {
            let options = DBusValue.stringVariantDictionary([:])
            return try await conn.call([UInt8].self, destination: BlueZ.service, path: charPath,
                                       interface: BlueZ.gattCharacteristic, method: "ReadValue",
                                       arguments: [options], timeout: try remaining("reading the ballot of"))
        } catch let e as DBusError {
            if e.isTimeout { throw TransportError.timeout("reading the ballot of \(device)") }
            logger.debug("ReadValue \(device): \(e)")
            if e.name == "org.bluez.Error.NotConnected" || e.meansBluetoothdGone { throw TransportError.notConnected(device) }
            throw BlueZError.rejected("ReadValue of \(device)", e)
        }
    }

    private func disconnect(_ conn: DBusConnection, _ path: DBusObjectPath) async {
        _ = try? await conn.call(destination: BlueZ.service, path: path, interface: BlueZ.device,
                                 method: "Disconnect", timeout: .seconds(2))
        // Our own disconnect: do not wait for PropertiesChanged to tell the mirror (a read right after
        // this one must not see a stale ServicesResolved).
        state.withLock { s in
            s.mirror.propertiesChanged(path, BlueZ.device, ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], [])
        }
    }

    /// Waits until `probe` returns a value or throws, evaluating it under the state lock now and again
    /// after every mirror change at or below `scope` (any change when nil) and every session change.
    /// At `deadline` it throws `expired()`; when the task is cancelled, `CancellationError`.
    @discardableResult
    func waitForMirror<T: Sendable>(_ stage: WaitStage, scope: DBusObjectPath?, until deadline: RadioInstant,
                                    expired: () -> any Error,
                                    _ probe: (inout State) throws -> T?) async throws -> T {
        let id = state.withLock { s -> Int in
            s.nextWaiterID &+= 1
            return s.nextWaiterID
        }
        let clock = options.clock
        let timer = Task { [weak self] in
            while clock.now < deadline {
                do { try await clock.sleep(until: deadline) } catch { return }
            }
            self?.unpark(id)
        }
        defer { timer.cancel() }
        while true {
            var look = MirrorLook<T>.parked
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    // Look and park under one lock: no change can slip in between.
                    look = state.withLock { s -> MirrorLook<T> in
                        do {
                            if let value = try probe(&s) { return .found(value) }
                        } catch {
                            return .failed(error)
                        }
                        if Task.isCancelled { return .cancelled }
                        if clock.now >= deadline { return .expired }
                        s.waiters[id] = MirrorWaiter(scope: scope, stage: stage, continuation: continuation)
                        return .parked
                    }
                    if case .parked = look { return }
                    continuation.resume()
                }
            } onCancel: {
                unpark(id)
            }
            switch look {
            case .found(let value): return value
            case .failed(let error): throw error
            case .expired: throw expired()
            case .cancelled: throw CancellationError()
            case .parked: continue  // woken: look again
            }
        }
    }

    /// Resumes waiter `id` if it is parked (deadline or cancellation), so that it looks again.
    private func unpark(_ id: Int) {
        let w = state.withLock { $0.waiters.removeValue(forKey: id) }
        w?.continuation.resume()
    }
}

/// What one look at the mirror found.
enum MirrorLook<T: Sendable>: Sendable {
    case found(T), failed(any Error), expired, cancelled, parked
}
