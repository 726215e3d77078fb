/// A JSON value (RFC 8259) as PushSeal reads and writes it.
///
/// Unlike Foundation's `JSONSerialization` on Linux, integers, floating-point numbers and
/// booleans stay distinct: `"mutable-content": 1` is `.integer(1)`, `true` is `.bool(true)`,
/// `1.0` is `.number(1.0)`. iOS runs a Notification Service Extension only for the integer 1,
/// so the difference matters. Objects keep their members in document order.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without fraction or exponent that fits in 64 bits.
    case integer(Int64)
    /// Any other number (fraction, exponent, or an integer beyond 64 bits).
    case number(Double)
    /// A string (any Unicode scalars, already unescaped).
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, members in document order.
    case object(JSONObject)

    /// The member `key` when this is an object, else `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The string when this is `.string`, else `nil`.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The integer when this is `.integer`, else `nil` (booleans and `1.0` are not integers).
    public var integerValue: Int64? {
        if case .integer(let i) = self { return i }
        return nil
    }

    /// The object when this is `.object`, else `nil`.
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// A short name of the value's JSON type, for error messages: `null`, `boolean`,
    /// `integer`, `number`, `string`, `array`, `object`.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer: "integer"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// A JSON object: members in document order, looked up by key.
///
/// Keys are unique (the reader rejects duplicates; `set` replaces). Lookup is linear, which is
/// fastest for the small objects of notification payloads (a dozen members).
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// The members in order.
    public private(set) var members: [(key: String, value: JSONValue)]

    /// An empty object.
    public init() { members = [] }

    /// An object with `members` in this order; later duplicates replace earlier ones.
    public init(_ members: [(key: String, value: JSONValue)]) {
        self.members = []
        self.members.reserveCapacity(members.count)
        for m in members { self[m.key] = m.value }
    }

    /// An object whose keys the caller already checked to be unique (``JSONReader`` does);
    /// takes `members` as is, without the quadratic lookups of ``init(_:)``.
    init(uniqueMembers members: [(key: String, value: JSONValue)]) {
        self.members = members
    }

    /// Creates an object from a literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }

    /// Number of members.
    public var count: Int { members.count }

    /// The value for `key`; setting `nil` removes the member, setting a new key appends it.
    public subscript(key: String) -> JSONValue? {
        get {
            for m in members where m.key == key { return m.value }
            return nil
        }
        set {
            if let i = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append((key: key, value: newValue))
            }
        }
    }

    /// Iterates members in order.
    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> { members.makeIterator() }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members.count)
        for m in members { hasher.combine(m.key); hasher.combine(m.value) }
    }
}
