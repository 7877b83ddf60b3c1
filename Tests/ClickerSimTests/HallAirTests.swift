import ClickerSim
import ClickerTransport
import XCTest

/// Receivers in a simulated hall: each hears the seats its links reach, capture differs per receiver,
/// and voters hear the beacon of the receivers they can hear.
final class HallAirTests: XCTestCase {
    let geometry = HallGeometry(rows: 30, seatsPerRow: 20)

    /// The addresses each of `streams` carried, once it has finished.
    func addresses(in streams: [AsyncThrowingStream<AdvertisementReport, any Error>]) async throws -> [Set<DeviceAddress>] {
        var heard: [Set<DeviceAddress>] = []
        for s in streams {
            var set = Set<DeviceAddress>()
            for try await r in s { set.insert(r.address) }
            heard.append(set)
        }
        return heard
    }

    /// The addresses each receiver's central heard after `seconds` of 600 voters advertising at 100 ms.
    func heardByReceiver(_ hall: LectureHall, seed: UInt64, seconds: Double) async throws -> [Set<DeviceAddress>] {
        let air = SimulatedAir(.hall(hall, seed: seed))
        let streams = air.centrals().map { $0.advertisements(companyID: companyID) }
        for i in 0..<geometry.seats { try await air.addPeripheral().advertise(payload(i)) }
        air.run(until: at(seconds))
        air.finishAdvertisementStreams()
        return try await addresses(in: streams)
    }

    /// The lectern's receiver alone, in a full 600-seat hall, hears at most 70 % of it: the seats whose
    /// link is above its sensitivity, which the model puts at `coverage` on average over the shadowing.
    func testTheFrontReceiverAloneHearsAtMost70PercentOfA600SeatHall() async throws {
        let hall = LectureHall(geometry: geometry, receivers: [.front])
        let seed: UInt64 = 31
        let heard = try await heardByReceiver(hall, seed: seed, seconds: 20)[0]
        let seats = hall.seatOrder(seed: seed)
        let inRange = (0..<600).filter {
            hall.receivedPower(.device($0), .receiver(0), seats: seats, seed: seed) >= LectureHall.sensitivity
        }.count
        let coverage = hall.coverage(receiver: 0, sensitivity: LectureHall.sensitivity)
        XCTAssertLessThanOrEqual(heard.count, 420, "at most 70 % of 600")
        XCTAssertLessThanOrEqual(heard.count, inRange, "nobody out of range is heard")
        XCTAssertGreaterThanOrEqual(heard.count, inRange - 6, "20 s is enough to hear those in range")
        XCTAssertEqual(Double(inRange) / 600, coverage, accuracy: 0.05, "this seed's shadowing is the model's")
    }

    /// Front, middle and back together hear every seat, and many seats are heard by two or more.
    func testThreeReceiversHearEverySeatAndSomeSeatsTwice() async throws {
        let hall = LectureHall(geometry: geometry, receivers: [.front, .middle, .back])
        let heard = try await heardByReceiver(hall, seed: 32, seconds: 20)
        XCTAssertEqual(heard.reduce(Set()) { $0.union($1) }.count, 600)
        XCTAssertLessThan(heard[0].count, 420)
        XCTAssertGreaterThan(heard.map(\.count).reduce(0, +), 700, "receivers' coverage overlaps")
    }

    /// Two voters, one in the front row and one in the back row, whose PDUs always overlap, each in range
    /// of both receivers: the front receiver captures the front voter's, the back receiver the back
    /// voter's, and the weaker PDU at each is lost.
    func testCaptureDiffersPerReceiver() async throws {
        let small = HallGeometry(rows: 10, seatsPerRow: 2)
        let hall = LectureHall(geometry: small, receivers: [.front, .back])
        // A seed that seats device 0 in the first row and device 1 in the last.
        let seed = try XCTUnwrap((UInt64(0)..<10_000).first { s in
            let seats = hall.seatOrder(seed: s)
            return seats[0] / 2 == 0 && seats[1] / 2 == 9
        })
        let seats = hall.seatOrder(seed: seed)
        for d in 0..<2 {
            for k in 0..<2 {
                XCTAssertGreaterThan(hall.receivedPower(.device(d), .receiver(k), seats: seats, seed: seed), LectureHall.sensitivity)
            }
        }
        var config = AirConfiguration.hall(hall, seed: seed, firstEventPhase: .immediate)
        config.maxAdvertisingDelay = .zero
        let air = SimulatedAir(config)
        let centrals = air.centrals()
        let streams = centrals.map { $0.advertisements(companyID: companyID) }
        let voters = [air.addPeripheral(), air.addPeripheral()]
        for (i, v) in voters.enumerated() { try await v.advertise(payload(i)) }
        air.run(until: at(2))
        XCTAssertGreaterThan(air.statistics.captures, 0)
        XCTAssertGreaterThan(air.statistics.collisions, 0)
        air.finishAdvertisementStreams()
        let heard = try await addresses(in: streams)
        XCTAssertEqual(heard, [[voters[0].address], [voters[1].address]])
    }

    /// Each receiver broadcasts; a listener hears the beacon of the receivers in range of its seat, under
    /// each one's address, and a receiver's own status names its place.
    func testListenersHearTheBeaconOfTheReceiversTheirSeatReaches() async throws {
        let hall = LectureHall(geometry: geometry, receivers: [.front, .back])
        let seed: UInt64 = 33
        let air = SimulatedAir(.hall(hall, seed: seed))
        let centrals = air.centrals()
        for c in centrals {
            try await c.broadcast(BroadcastPayload(companyID: companyID, frames: [[1, 2, 3]], interval: .milliseconds(50)))
        }
        let seats = hall.seatOrder(seed: seed)
        let listens = (0..<600).map { _ in air.addPeripheral().listen(companyID: companyID, dutyCycle: .continuous) }
        air.run(until: at(10))
        air.finishAdvertisementStreams()
        let addresses = centrals.map(\.address)
        XCTAssertEqual(addresses[0], air.configuration.broadcast.centralAddress)
        XCTAssertEqual(Set(addresses).count, 2)
        var both = 0
        for (d, l) in listens.enumerated() {
            var from = Set<DeviceAddress>()
            for try await r in l { from.insert(r.address) }
            for k in 0..<2 {
                let power = hall.receivedPower(.receiver(k), .device(d), seats: seats, seed: seed)
                if power < LectureHall.sensitivity {
                    XCTAssertFalse(from.contains(addresses[k]), "seat \(seats[d]) is out of receiver \(k)'s range")
                } else if power > LectureHall.sensitivity + 10 {
                    XCTAssertTrue(from.contains(addresses[k]), "seat \(seats[d]) hears receiver \(k) at \(power) dBm")
                }
            }
            if from.count == 2 { both += 1 }
        }
        XCTAssertGreaterThan(both, 0)
        var status = centrals[1].status().makeAsyncIterator()
        let s = await status.next()
        XCTAssertEqual(s?.adapter, "simulated air (back)")
    }
}
