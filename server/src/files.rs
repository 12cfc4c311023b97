//! Files uploaded to attach to dispute messages.
