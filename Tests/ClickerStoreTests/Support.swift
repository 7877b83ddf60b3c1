import ClickerStore
import Foundation
import XCTest

/// A fresh temporary directory, removed at the end of the test.
func makeTempDir(_ test: XCTestCase) throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("clicker-store-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
    return dir
}

/// A stored voter for a voter number, as the tally stores it: the mode byte (0, anonymous), then
/// the 32-bit voter ID big-endian (the number modulo 2^32).
func voterID(_ n: UInt64) -> Data {
    Data([0] + (0..<4).map { UInt8(truncatingIfNeeded: n >> (24 - 8 * UInt64($0))) })
}

/// Minimal RFC 4180 parser used to read exports back (independent of the exporter's code).
func parseCSV(_ text: String) throws -> [[String]] {
    struct BadCSV: Error { let why: String }
    var rows: [[String]] = []
    var row: [String] = []
    var field = ""
    var inQuotes = false
    var atFieldStart = true
    var chars = Array(text.unicodeScalars)[...]
    while let c = chars.popFirst() {
        if inQuotes {
            if c == "\"" {
                if chars.first == "\"" { chars.removeFirst(); field.unicodeScalars.append("\"") } else { inQuotes = false }
            } else {
                field.unicodeScalars.append(c)
            }
            continue
        }
        switch c {
        case "\"":
            guard atFieldStart else { throw BadCSV(why: "quote inside unquoted field") }
            inQuotes = true
            atFieldStart = false
        case ",":
            row.append(field); field = ""; atFieldStart = true
        case "\r":
            guard chars.popFirst() == "\n" else { throw BadCSV(why: "bare CR") }
            row.append(field); rows.append(row); row = []; field = ""; atFieldStart = true
        case "\n":
            throw BadCSV(why: "bare LF line end")
        default:
            field.unicodeScalars.append(c); atFieldStart = false
        }
    }
    guard !inQuotes else { throw BadCSV(why: "unterminated quote") }
    guard field.isEmpty, row.isEmpty else { throw BadCSV(why: "missing final CRLF") }
    return rows
}

/// CSV rows as dictionaries keyed by the header row.
func csvRecords(_ text: String) throws -> [[String: String]] {
    let rows = try parseCSV(text)
    guard let header = rows.first else { return [] }
    return rows.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
}
