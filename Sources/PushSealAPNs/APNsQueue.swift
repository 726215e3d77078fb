/// A first-in first-out queue on an array with a moving head: `popFirst` is O(1), the consumed
/// prefix is dropped when the queue empties or grows past a few thousand. Not `Sendable`
/// beyond its elements; used on the transfer thread only.
struct APNsQueue<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: Element? { isEmpty ? nil : items[head] }
    /// The waiting elements, oldest first.
    var elements: ArraySlice<Element> { items[head...] }

    mutating func append(_ element: Element) { items.append(element) }

    /// Puts `element` before every waiting one.
    mutating func prepend(_ element: Element) { items.insert(element, at: head) }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let e = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096 {
            items.removeFirst(head)
            head = 0
        }
        return e
    }

    /// Removes the first element that matches; `true` if one did.
    mutating func removeFirst(where matches: (Element) -> Bool) -> Bool {
        guard let i = items[head...].firstIndex(where: matches) else { return false }
        items.remove(at: i)
        return true
    }

    mutating func removeAll() {
        items.removeAll()
        head = 0
    }
}
