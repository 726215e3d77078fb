public import PushSealSystem

extension ErrorCode<CryptoError> {
    /// A key file or key bytes are not what was asked for: not PEM/DER, not a private key, not
    /// an EC key on P-256 (e.g. an RSA or P-384 key given as an APNs `.p8`).
    public static var invalidKey: Self { Self("invalidKey") }
}
