// SPDX-License-Identifier: GPL-2.0

//! Constants of `include/uapi/linux/vmwlch.h` (checked against the header by
//! a user-space test in `core/tests/uapi.rs`).

/// Host name buffer size including the NUL.
pub(crate) const VMWLCH_HOST_NAME_MAX: usize = 64;
/// Hosts per namespace.
pub(crate) const VMWLCH_MAX_HOSTS: usize = 1024;
/// Mapped addresses per namespace.
pub(crate) const VMWLCH_MAX_MEMBERS: usize = 65536;
/// Largest host weight.
pub(crate) const VMWLCH_MAX_WEIGHT: u32 = 65535;
/// Weight of a host created without one.
pub(crate) const VMWLCH_DEFAULT_WEIGHT: u32 = 1;

pub(crate) const VMWLCH_CMD_SET_HOST: u8 = 1;
pub(crate) const VMWLCH_CMD_DEL_HOST: u8 = 2;
pub(crate) const VMWLCH_CMD_ADD_MEMBERS: u8 = 3;
pub(crate) const VMWLCH_CMD_DEL_MEMBERS: u8 = 4;
pub(crate) const VMWLCH_CMD_REPLACE_MAP: u8 = 5;
pub(crate) const VMWLCH_CMD_FLUSH: u8 = 6;
pub(crate) const VMWLCH_CMD_GET_HOST: u8 = 7;
pub(crate) const VMWLCH_CMD_GET_INFO: u8 = 8;

pub(crate) const VMWLCH_A_HOST_NAME: u16 = 1;
pub(crate) const VMWLCH_A_HOST_WEIGHT: u16 = 2;
pub(crate) const VMWLCH_A_HOST_MEMBERS: u16 = 3;
pub(crate) const VMWLCH_A_HOST: u16 = 4;
pub(crate) const VMWLCH_A_HOST_ACTIVECONNS: u16 = 5;
pub(crate) const VMWLCH_A_HOST_INACTCONNS: u16 = 6;
pub(crate) const VMWLCH_A_HOST_DESTS: u16 = 7;
pub(crate) const VMWLCH_A_INFO_VERSION: u16 = 8;
pub(crate) const VMWLCH_A_INFO_MAX_HOSTS: u16 = 9;
pub(crate) const VMWLCH_A_INFO_MAX_MEMBERS: u16 = 10;
pub(crate) const VMWLCH_A_INFO_HOSTS: u16 = 11;
pub(crate) const VMWLCH_A_INFO_MEMBERS: u16 = 12;
pub(crate) const VMWLCH_A_INFO_SERVICES: u16 = 13;
pub(crate) const VMWLCH_A_INFO_DESTS: u16 = 14;
pub(crate) const VMWLCH_A_INFO_DECISIONS: u16 = 15;
pub(crate) const VMWLCH_A_INFO_NO_DEST: u16 = 16;
pub(crate) const VMWLCH_A_INFO_GENERATION: u16 = 17;
pub(crate) const VMWLCH_A_INFO_FALLBACKS: u16 = 19;
pub(crate) const VMWLCH_A_INFO_REBUILDS: u16 = 20;
pub(crate) const VMWLCH_A_INFO_DEFERRED: u16 = 21;
pub(crate) const VMWLCH_A_INFO_REBUILD_FAILURES: u16 = 22;
pub(crate) const VMWLCH_A_INFO_REBUILD_RETRIES: u16 = 23;
pub(crate) const VMWLCH_A_INFO_TRACK_FAILURES: u16 = 24;
pub(crate) const VMWLCH_A_INFO_SNAPSHOT_CURRENT: u16 = 25;
pub(crate) const VMWLCH_A_INFO_BUILD_NS: u16 = 26;
pub(crate) const VMWLCH_A_INFO_HOST_AWARE: u16 = 27;

pub(crate) const VMWLCH_MEMBER_A_ADDR: u16 = 1;
