import ClickerTransport
import DBus

/// Discovery (GAP scanning): started while someone listens, restarted periodically, and the devices
/// it created removed when stale.
extension CentralEngine {
    /// Starts or stops discovery to match whether anyone listens.
    func syncDiscovery(_ conn: DBusConnection) async {
        let (want, adapter, discovering, powered) = state.withLock {
            (!$0.subscribers.isEmpty, $0.adapterPath, $0.discovering, $0.adapterPowered)
        }
        guard let adapter else { return }
        if want && !discovering && powered {
            if let e = await startDiscovery(conn, adapter) {
                noteTrouble(e)
                return
            }
            state.withLock { $0.discovering = true }
            updateStatus {
                $0.state = .scanning
                $0.lastError = nil
                $0.lastDiscoveryRestart = options.clock.now
            }
        } else if !want && discovering {
            _ = try? await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                     method: "StopDiscovery", timeout: options.callTimeout)
            state.withLock { $0.discovering = false }
            updateStatus { $0.state = .stopped }
        } else if !want {
            updateStatus {
                if $0.state == .recovering || $0.state == .starting { $0.lastError = nil }
                $0.state = .stopped
            }
        }
    }

    func startDiscovery(_ conn: DBusConnection, _ adapter: DBusObjectPath) async -> BlueZError? {
        let filter = DBusValue.stringVariantDictionary(["Transport": .string("le"), "DuplicateData": .boolean(true)])
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                    method: "SetDiscoveryFilter", arguments: [filter], timeout: options.callTimeout)
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                    method: "StartDiscovery", timeout: options.callTimeout)
            return nil
        } catch let e as DBusError {
            if e.name == "org.bluez.Error.InProgress" { return nil }
            if e.name == "org.bluez.Error.NotReady" { return .adapterPoweredOff(state.withLock { $0.adapterName }) }
            if e.meansBluetoothdGone { return .bluetoothdNotRunning }
            return .rejected("StartDiscovery", e)
        } catch {
            return .rejected("StartDiscovery", DBusError(name: DBusError.failed, message: "\(error)"))
        }
    }

    func restartDiscovery(_ conn: DBusConnection) async {
        let (adapter, discovering) = state.withLock { ($0.adapterPath, $0.discovering) }
        guard let adapter, discovering else { return }
        _ = try? await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                 method: "StopDiscovery", timeout: options.callTimeout)
        if let e = await startDiscovery(conn, adapter) {
            state.withLock { $0.discovering = false }
            noteTrouble(e)
            return
        }
        state.withLock { $0.stats.discoveryRestarts += 1 }
        updateStatus {
            $0.state = .scanning
            $0.lastError = nil
            $0.lastDiscoveryRestart = options.clock.now
        }
    }

    /// RemoveDevice on devices discovery created that have not been heard for `olderThan`.
    func sweepStale(_ conn: DBusConnection, olderThan: Duration) async {
        let now = options.clock.now
        let (adapter, victims): (DBusObjectPath?, [DBusObjectPath]) = state.withLock { s in
            guard let adapter = s.adapterPath else { return (nil, []) }
            let victims = s.caused.compactMap { path, appeared -> DBusObjectPath? in
                guard path.isDescendant(of: adapter, orSelf: false), s.busy[path] == nil else { return nil }
                var last = appeared
                if let a = DevicePath.address(of: path.rawValue), let h = s.heard[a], h.lastSeen > last { last = h.lastSeen }
                guard now - last >= olderThan else { return nil }
                if s.mirror.bool(path, BlueZ.device, "Connected") == true || s.mirror.bool(path, BlueZ.device, "Paired") == true {
                    return nil
                }
                return path
            }
            return (adapter, victims)
        }
        state.withLock { $0.forgetUnheard(olderThan: olderThan, now: now) }
        guard let adapter else { return }
        for path in victims {
            do {
                _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                        method: "RemoveDevice", arguments: [.objectPath(path)],
                                        timeout: options.callTimeout)
                logger.debug("removed stale device \(path)")
                state.withLock { s in
                    s.stats.staleDevicesRemoved += 1
                    s.caused[path] = nil
                }
            } catch {
                logger.debug("RemoveDevice \(path) failed: \(error)")
                state.withLock { _ = $0.caused.removeValue(forKey: path) }
            }
        }
    }
}
