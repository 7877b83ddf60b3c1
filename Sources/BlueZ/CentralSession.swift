import ClickerTransport
import DBus

/// The adapter session (GAP, central role): the bus connection, bluetoothd appearing and vanishing,
/// the object mirror read once and then followed, the adapter chosen and followed.
extension CentralEngine {
    func run() async {
        while !Task.isCancelled {
            let conn: DBusConnection
            do {
                conn = try await DBusConnection.connect(options.bus, clock: options.clock.elapsed)
            } catch {
                let e = BlueZError.busUnreachable(options.bus.spokenName, "\(error)")
                if !state.withLock({ $0.everReady }) && !options.waitForRadio {
                    failStartup(e)
                    return
                }
                noteTrouble(e)
                try? await options.clock.sleep(for: options.retryInterval)
                continue
            }
            let outcome = await session(conn)
            conn.close()
            state.withLock { s in
                s.connection = nil
                s.control = nil
                s.ready = false
                s.discovering = false
                s.adapterPath = nil
                s.mirror.removeAll()
                s.forgetDevices()
            }
            wakeWaiters()
            switch outcome {
            case .shutdown:
                return
            case .failed(let e):
                if !state.withLock({ $0.everReady }) && !options.waitForRadio {
                    failStartup(e)
                    return
                }
                noteTrouble(e)
            case .disconnected(let why):
                let e = BlueZError.busUnreachable(options.bus.spokenName, why ?? "connection lost")
                noteTrouble(e)
                radioLost(e)
            }
            if Task.isCancelled { return }
            try? await options.clock.sleep(for: options.retryInterval)
        }
    }

    func session(_ conn: DBusConnection) async -> Outcome {
        let (control, controlCont) = AsyncStream<Control>.makeStream()
        // BlueZ's signals come through a reader of their own (its own socket and thread, our own
        // unmarshalling) and are handled on its thread as they are read (``SignalGate``): no task to wake
        // for each batch. Calls stay on `conn`.
        let gate = SignalGate(engine: self, control: controlCont)
        let reader: DBusSignalReader
        let owners: AsyncStream<DBusNameOwnerChange>
        do {
            // Subscribe before reading the tree (the bus has added the rule when this returns), so
            // nothing between the two is missed.
            reader = try await DBusSignalReader.open(
                options.bus, matching: [DBusMatchRule(sender: BlueZ.service)], maxBatch: 1024, stats: signalStats,
                decode: { [clock = options.clock] m in try SignalDecoder.decode(m, clock: clock) },
                deliver: { gate.deliver($0) }, finished: { gate.finish($0) })
        } catch {
            return .failed(.busUnreachable(options.bus.spokenName, "\(error)"))
        }
        defer {
            gate.close()
            reader.close()
        }
        do {
            owners = try await conn.nameOwnerChanges(for: BlueZ.service)
        } catch {
            return .failed(.busUnreachable(options.bus.spokenName, "\(error)"))
        }
        let stop = state.withLock { s -> Bool in
            if s.shutDown { return true }
            s.connection = conn
            s.control = controlCont
            return false
        }
        if stop { return .shutdown }
        let tick = min(options.retryInterval, .seconds(1)), clock = options.clock
        gate.open()
        return await withTaskGroup(of: Void.self) { group -> Outcome in
            group.addTask {
                for await change in owners { controlCont.yield(.owner(change.newOwner)) }
                // The stream ends with the connection its calls go through.
                if !Task.isCancelled { controlCont.yield(.connectionClosed(nil)) }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await clock.sleep(for: tick)
                    controlCont.yield(.tick)
                }
            }
            let outcome = await controlLoop(conn, control)
            group.cancelAll()
            return outcome
        }
    }

    func controlLoop(_ conn: DBusConnection, _ control: AsyncStream<Control>) async -> Outcome {
        var lastAttempt = options.clock.now
        if let e = await acquire(conn) {
            if !state.withLock({ $0.everReady }) && !options.waitForRadio { return .failed(e) }
            noteTrouble(e)
        }
        var lastRestart = options.clock.now
        var lastSweep = options.clock.now
        for await event in control {
            if Task.isCancelled { return .shutdown }
            switch event {
            case .connectionClosed(let why):
                return state.withLock { $0.shutDown } ? .shutdown : .disconnected(why)
            case .owner(let newOwner):
                if newOwner.isEmpty {
                    state.withLock { s in
                        s.mirror.removeAll()
                        s.forgetDevices()
                        s.adapterPath = nil
                        s.ready = false
                        s.discovering = false
                    }
                    wakeWaiters()
                    noteTrouble(.bluetoothdNotRunning)
                    radioLost(.bluetoothdNotRunning)
                } else {
                    logger.info("bluetoothd (re)appeared as \(newOwner); rebuilding the object mirror")
                    lastAttempt = options.clock.now
                    if let e = await acquire(conn) { noteTrouble(e) }
                }
            case .adapterRemoved:
                let name = state.withLock { s -> String in
                    s.adapterPath = nil
                    s.discovering = false
                    return s.adapterName
                }
                wakeWaiters()
                noteTrouble(.noAdapter(options.adapter.description, []))
                radioLost(.noAdapter(options.adapter.description, []))
                logger.warning("adapter \(name) went away")
                lastAttempt = options.clock.now
                if let e = await acquire(conn) { noteTrouble(e) }
            case .adapterAdded:
                if state.withLock({ $0.adapterPath == nil }) {
                    lastAttempt = options.clock.now
                    if let e = await acquire(conn) { noteTrouble(e) }
                }
            case .powered(let on):
                if on {
                    state.withLock { s in
                        s.adapterPowered = true
                        s.radioLost = nil
                        s.troubleLogged = nil
                    }
                    await syncDiscovery(conn)
                } else {
                    let name = state.withLock { s -> String in
                        s.adapterPowered = false
                        s.discovering = false
                        return s.adapterName
                    }
                    noteTrouble(.adapterPoweredOff(name))
                    radioLost(.adapterPoweredOff(name))
                }
            case .subscribersChanged:
                await syncDiscovery(conn)
            case .tick:
                let now = options.clock.now
                let (haveAdapter, ready) = state.withLock { ($0.adapterPath != nil, $0.ready) }
                if (!haveAdapter || !ready) && now - lastAttempt >= options.retryInterval {
                    lastAttempt = now
                    if let e = await acquire(conn) { noteTrouble(e) }
                }
                if let every = options.discoveryRestartInterval, now - lastRestart >= every {
                    lastRestart = now
                    await restartDiscovery(conn)
                }
                if let stale = options.staleDeviceTimeout, now - lastSweep >= options.staleSweepInterval {
                    lastSweep = now
                    await sweepStale(conn, olderThan: stale)
                }
            }
        }
        return .shutdown
    }

    // MARK: Acquiring bluetoothd and the adapter

    /// Reads the object tree, picks the adapter and (if anyone listens) starts discovery.
    /// Returns the problem, if any.
    func acquire(_ conn: DBusConnection) async -> BlueZError? {
        state.withLock { s in
            s.acquiring = true
            s.pending = []
        }
        var mirror: ObjectMirror
        do {
            mirror = try await conn.call(ObjectMirror.self, destination: BlueZ.service, path: BlueZ.root,
                                         interface: BlueZ.objectManager, method: "GetManagedObjects",
                                         timeout: options.callTimeout)
        } catch {
            state.withLock { s in
                s.acquiring = false
                s.pending = []
                s.ready = false
            }
            wakeWaiters()
            if let e = error as? DBusError, e.meansBluetoothdGone { return .bluetoothdNotRunning }
            if let e = error as? DBusError { return .rejected("GetManagedObjects", e) }
            return .rejected("GetManagedObjects", DBusError(name: DBusError.failed, message: "\(error)"))
        }
        let adapters = mirror.adapters()
        let chosen = mirror.adapter(matching: options.adapter)
        let problem: BlueZError? = state.withLock { s in
            for sig in s.pending { Self.applyToMirror(sig, &mirror) }
            s.pending = []
            s.acquiring = false
            s.mirror = mirror
            s.ready = true
            s.stats.acquisitions += 1
            s.discovering = false
            guard let chosen else {
                s.adapterPath = nil
                return .noAdapter(options.adapter.description, adapters.map(\.name))
            }
            s.adapterPath = chosen.path
            s.adapterName = chosen.name
            s.adapterPowered = chosen.powered
            if chosen.powered {
                s.everReady = true
                s.radioLost = nil
                s.troubleLogged = nil
            }
            // Devices already known before we scan were not caused by us.
            s.caused = s.caused.filter { mirror.properties($0.key, BlueZ.device) != nil }
            return chosen.powered ? nil : .adapterPoweredOff(chosen.name)
        }
        wakeWaiters()
        let name = state.withLock { $0.adapterName }
        updateStatus { $0.adapter = name }
        if let problem { return problem }
        logger.info("using adapter \(name); \(mirror.count) objects mirrored")
        await syncDiscovery(conn)
        return nil
    }
}
