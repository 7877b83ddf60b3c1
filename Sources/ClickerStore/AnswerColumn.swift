import ClickerWire
import GRDB

/// The store writes an answer in ClickerWire's answer encoding, the three plaintext bytes of a
/// ballot (kind, value high byte, value low byte: PROTOCOL.md §4), as one integer
/// `kind << 16 | value`. Nothing else encodes answers for the database.
extension Answer: DatabaseValueConvertible {
    /// `kind << 16 | value`, from ``Answer/wireBytes``.
    public var databaseValue: DatabaseValue {
        let (k, hi, lo) = wireBytes
        return (Int64(k) << 16 | Int64(hi) << 8 | Int64(lo)).databaseValue
    }

    /// Through ``Answer/init(wire:_:_:)``: nil (a decoding error) for anything it would reject.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Answer? {
        guard let v = Int64.fromDatabaseValue(value), (0...0xFF_FFFF).contains(v) else { return nil }
        return Answer(wire: UInt8(v >> 16), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF))
    }
}

// Codable through the same integer, so that the Codable records store it as one column.
extension Answer: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let v = try container.decode(Int64.self)
        guard let a = Answer.fromDatabaseValue(v.databaseValue) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an answer: \(v)")
        }
        self = a
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        let (k, hi, lo) = wireBytes
        try container.encode(Int64(k) << 16 | Int64(hi) << 8 | Int64(lo))
    }
}
