public import PushSealWire

extension PushNotification {
    /// Title, subtitle and body for `locale`: the variant whose tag matches the locale, else
    /// the locale with its last subtag removed, and so on (`pt-BR` → `pt`), else the default.
    /// Tags compare case-insensitively with `_` read as `-`. A variant's missing field falls
    /// back to the default's field.
    /// - Parameter locale: the device locale, e.g. `pt-BR`; `nil` picks the default.
    /// - Returns: the texts and the tag used as written in `localizations` (`nil` for the default).
    public func localized(for locale: String?) -> (title: String?, subtitle: String?, body: String?, locale: String?) {
        func normalize(_ tag: String) -> String { tag.replacing("_", with: "-").lowercased() }
        if var wanted = locale.map(normalize), !wanted.isEmpty {
            while true {
                if let variant = localizations.first(where: { normalize($0.locale) == wanted }) {
                    let c = variant.content
                    return (c.title ?? title, c.subtitle ?? subtitle, c.body ?? body, variant.locale)
                }
                guard let cut = wanted.lastIndex(of: "-") else { break }
                wanted = String(wanted[..<cut])
            }
        }
        return (title, subtitle, body, nil)
    }
}
