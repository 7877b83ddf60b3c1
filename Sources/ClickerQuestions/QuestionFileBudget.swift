import CYaml

/// The bounds a question file is checked against before it is parsed into nodes: its size, its
/// nesting, and no aliases. A question file needs none (its deepest node is an option text, at depth
/// 4), and aliases are how a few hundred bytes of YAML ask for exponential work (nested anchors
/// used as mapping keys are hashed whole: about ninefold per level). libyaml's event parser takes
/// time linear in the text, and the check stops at the first node out of bounds, with its line.
extension QuestionFile {
    /// At most this many bytes: 255 questions of 8 long options each fit many times over.
    public static let maxBytes = 1 << 20
    /// At most this deep a nesting of lists and mappings.
    public static let maxDepth = 16

    /// Refuses `text` when it is larger than `maxBytes`, nests deeper than `maxDepth`, or uses an
    /// alias (`*name`). Syntax errors are left to the parser, which words them.
    static func checkBudget(_ text: String, file: String) throws(QuestionFileError) {
        let size = text.utf8.count
        guard size <= maxBytes else {
            throw QuestionFileError(file: file, line: 1, message: "the file is \(size) bytes, at most \(maxBytes)")
        }
        var utf8 = Array(text.utf8)
        let refusal: QuestionFileError? = utf8.withUnsafeMutableBufferPointer { buffer in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else { return nil }
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var depth = 0
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_ALIAS_EVENT:
                    return QuestionFileError(file: file, line: line,
                                             message: "an alias ('*…'): a question file uses no anchors or aliases")
                case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                    depth += 1
                    if depth > maxDepth {
                        return QuestionFileError(file: file, line: line,
                                                 message: "lists and mappings nested more than \(maxDepth) deep")
                    }
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    depth -= 1
                default:
                    break
                }
            }
        }
        if let refusal { throw refusal }
    }
}
