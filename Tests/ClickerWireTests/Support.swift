import Foundation

func hexBytes(_ s: String) -> [UInt8]? {
    let c = Array(s.utf8)
    guard c.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    for i in stride(from: 0, to: c.count, by: 2) {
        guard let b = UInt8(String(decoding: c[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
        out.append(b)
    }
    return out
}

func hexString(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

/// The ```vector blocks of docs/PROTOCOL-VECTORS.md (the appendix of PROTOCOL.md), each as key → value.
func protocolVectors() throws -> [[String: String]] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL-VECTORS.md")
    let text = try String(contentsOf: url, encoding: .utf8)
    var blocks: [[String: String]] = []
    var current: [String: String]?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        if line == "```vector" { current = [:]; continue }
        if line == "```", let c = current { blocks.append(c); current = nil; continue }
        if current != nil, let colon = line.firstIndex(of: ":") {
            let k = String(line[..<colon])
            let v = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            current?[k] = v
        }
    }
    return blocks
}
