extension WireFormat {
    /// The latest time, in seconds since 1970 UTC, a sealed notification's `iat` or `exp` may
    /// name, and the latest time the key lifecycle accepts or computes: 253402300799,
    /// 9999-12-31T23:59:59Z (the last second with a four-digit year). The earliest is 0
    /// (1970-01-01T00:00:00Z). The sender's `SealRequest` and
    /// PushSealKeyRecords' `KeyTime.maxTimeSeconds` are this value.
    public static let maxTimeSeconds: Int64 = 253_402_300_799

    /// ``maxTimeSeconds`` as people read it, for error messages: `9999-12-31T23:59:59Z (253402300799)`.
    public static let maxTimeText = "9999-12-31T23:59:59Z (253402300799)"
}
