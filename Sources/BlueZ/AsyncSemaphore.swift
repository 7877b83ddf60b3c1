/// A counting semaphore for tasks, with a timed acquire.
actor AsyncSemaphore {
    private var permits: Int
    private var waiters: [(id: Int, cont: CheckedContinuation<Bool, Never>)] = []
    private var nextID = 0

    init(permits: Int) { self.permits = permits }

    /// Waits for a permit; false when `timeout` passed first.
    func acquire(timeout: Duration) async -> Bool {
        if permits > 0 {
            permits -= 1
            return true
        }
        let id = nextID
        nextID += 1
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(id)
        }
        let got = await withCheckedContinuation { cont in waiters.append((id, cont)) }
        timer.cancel()
        return got
    }

    private func expire(_ id: Int) {
        guard let i = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: i).cont.resume(returning: false)
    }

    func release() {
        if waiters.isEmpty {
            permits += 1
        } else {
            waiters.removeFirst().cont.resume(returning: true)
        }
    }
}
