// The server stores' value types that live in PushSealKeyRecords (device tokens, records, key
// ids, times) are part of this module's API: a client importing PushSealServerKeys names them
// without importing PushSealKeyRecords too.
@_exported public import PushSealKeyRecords
