/// A binary min-heap of timed events, ordered by (time, sequence number) so that events at the
/// same instant run in the order they were scheduled: the run is deterministic.
struct EventQueue<Payload> {
    struct Entry {
        var time: UInt64
        var sequence: UInt64
        var payload: Payload
        func precedes(_ o: Entry) -> Bool { time < o.time || (time == o.time && sequence < o.sequence) }
    }

    private var heap: [Entry] = []
    private var nextSequence: UInt64 = 0

    var count: Int { heap.count }
    var isEmpty: Bool { heap.isEmpty }
    var nextTime: UInt64? { heap.first?.time }

    mutating func push(_ payload: Payload, at time: UInt64) {
        heap.append(Entry(time: time, sequence: nextSequence, payload: payload))
        nextSequence &+= 1
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].precedes(heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> Entry? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var i = 0
        let n = heap.count
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < n && heap[l].precedes(heap[m]) { m = l }
            if r < n && heap[r].precedes(heap[m]) { m = r }
            if m == i { break }
            heap.swapAt(i, m)
            i = m
        }
        return top
    }
}
