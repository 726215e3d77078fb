/// A bounded table that drops its least recently used entry when full: the storage of the key
/// caches (``HPKE/AuthPairCache``, ``X25519/PublicKeyCache``).
///
/// A dictionary from key to slot and a doubly linked list of slots in use order (slot indices
/// into parallel arrays, so no node objects): lookup, insert, move-to-front and eviction are
/// O(1). A removed or evicted value is released at once (a value that zeroes itself in `deinit`
/// is zeroed then, unless a caller still holds it). Not thread-safe: owners keep it in a
/// `Locked` (PushSealSystem).
struct LRUTable<Key: Hashable, Value> {
    /// The most entries held at once, at least 1.
    let capacity: Int
    private var slots: [Key: Int] = [:]
    private var keys: [Key?] = []
    private var values: [Value?] = []
    private var newer: [Int] = []
    private var older: [Int] = []
    private var free: [Int] = []
    /// Most recently used slot, -1 when empty.
    private var newest = -1
    /// Least recently used slot, -1 when empty.
    private var oldest = -1

    /// An empty table of at most `capacity` entries (values below 1 count as 1).
    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// How many entries are held.
    var count: Int { slots.count }

    /// The value for `key`, marked as most recently used; nil when absent.
    mutating func value(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        moveToFront(slot)
        return values[slot]
    }

    /// Stores `value` for `key` as the most recently used entry, replacing (and releasing) any
    /// value it had; when that makes one entry too many, the least recently used is dropped.
    mutating func set(_ value: Value, for key: Key) {
        if let slot = slots[key] {
            values[slot] = value
            moveToFront(slot)
            return
        }
        if slots.count >= capacity, oldest >= 0 { removeSlot(oldest) }
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            keys[slot] = key
            values[slot] = value
        } else {
            slot = keys.count
            keys.append(key)
            values.append(value)
            newer.append(-1)
            older.append(-1)
        }
        slots[key] = slot
        link(slot)
    }

    /// Removes (and releases) every entry for which `matches` is true.
    mutating func removeAll(where matches: (Key, Value) -> Bool) {
        for (key, slot) in slots {
            if let value = values[slot], matches(key, value) { removeSlot(slot) }
        }
    }

    /// Removes (and releases) every entry.
    mutating func removeAll() {
        self = LRUTable(capacity: capacity)
    }

    private mutating func removeSlot(_ slot: Int) {
        unlink(slot)
        if let key = keys[slot] { slots[key] = nil }
        keys[slot] = nil
        values[slot] = nil
        free.append(slot)
    }

    private mutating func moveToFront(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        link(slot)
    }

    /// Puts `slot` at the newest end.
    private mutating func link(_ slot: Int) {
        older[slot] = newest
        newer[slot] = -1
        if newest >= 0 { newer[newest] = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let n = newer[slot], o = older[slot]
        if n >= 0 { older[n] = o } else { newest = o }
        if o >= 0 { newer[o] = n } else { oldest = n }
        newer[slot] = -1
        older[slot] = -1
    }
}

extension LRUTable: Sendable where Key: Sendable, Value: Sendable {}
