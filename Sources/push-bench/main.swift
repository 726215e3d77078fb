// Placeholder until this tool's issue lands.
import Foundation
FileHandle.standardError.write("push-bench: error: not built yet\n".data(using: .utf8) ?? Data())
exit(69)
