//! Constants of the kernel's IPVS generic netlink interface
//! (`include/uapi/linux/ip_vs.h`).
#![allow(missing_docs)]

pub const IPVS_GENL_NAME: &str = "IPVS";
pub const IPVS_GENL_VERSION: u8 = 1;
/// `IP_VS_VERSION_CODE` of the kernel side (1.2.1).
pub const IP_VS_VERSION_CODE: u32 = 0x010201;

// Commands.
pub const IPVS_CMD_UNSPEC: u8 = 0;
pub const IPVS_CMD_NEW_SERVICE: u8 = 1;
pub const IPVS_CMD_SET_SERVICE: u8 = 2;
pub const IPVS_CMD_DEL_SERVICE: u8 = 3;
pub const IPVS_CMD_GET_SERVICE: u8 = 4;
pub const IPVS_CMD_NEW_DEST: u8 = 5;
pub const IPVS_CMD_SET_DEST: u8 = 6;
pub const IPVS_CMD_DEL_DEST: u8 = 7;
pub const IPVS_CMD_GET_DEST: u8 = 8;
pub const IPVS_CMD_NEW_DAEMON: u8 = 9;
pub const IPVS_CMD_DEL_DAEMON: u8 = 10;
pub const IPVS_CMD_GET_DAEMON: u8 = 11;
pub const IPVS_CMD_SET_CONFIG: u8 = 12;
pub const IPVS_CMD_GET_CONFIG: u8 = 13;
pub const IPVS_CMD_SET_INFO: u8 = 14;
pub const IPVS_CMD_GET_INFO: u8 = 15;
pub const IPVS_CMD_ZERO: u8 = 16;
pub const IPVS_CMD_FLUSH: u8 = 17;

// Top-level attributes.
pub const IPVS_CMD_ATTR_SERVICE: u16 = 1;
pub const IPVS_CMD_ATTR_DEST: u16 = 2;
pub const IPVS_CMD_ATTR_DAEMON: u16 = 3;
pub const IPVS_CMD_ATTR_TIMEOUT_TCP: u16 = 4;
pub const IPVS_CMD_ATTR_TIMEOUT_TCP_FIN: u16 = 5;
pub const IPVS_CMD_ATTR_TIMEOUT_UDP: u16 = 6;

// Service attributes.
pub const IPVS_SVC_ATTR_AF: u16 = 1;
pub const IPVS_SVC_ATTR_PROTOCOL: u16 = 2;
pub const IPVS_SVC_ATTR_ADDR: u16 = 3;
pub const IPVS_SVC_ATTR_PORT: u16 = 4;
pub const IPVS_SVC_ATTR_FWMARK: u16 = 5;
pub const IPVS_SVC_ATTR_SCHED_NAME: u16 = 6;
pub const IPVS_SVC_ATTR_FLAGS: u16 = 7;
pub const IPVS_SVC_ATTR_TIMEOUT: u16 = 8;
pub const IPVS_SVC_ATTR_NETMASK: u16 = 9;
pub const IPVS_SVC_ATTR_STATS: u16 = 10;
pub const IPVS_SVC_ATTR_PE_NAME: u16 = 11;
pub const IPVS_SVC_ATTR_STATS64: u16 = 12;

// Destination attributes.
pub const IPVS_DEST_ATTR_ADDR: u16 = 1;
pub const IPVS_DEST_ATTR_PORT: u16 = 2;
pub const IPVS_DEST_ATTR_FWD_METHOD: u16 = 3;
pub const IPVS_DEST_ATTR_WEIGHT: u16 = 4;
pub const IPVS_DEST_ATTR_U_THRESH: u16 = 5;
pub const IPVS_DEST_ATTR_L_THRESH: u16 = 6;
pub const IPVS_DEST_ATTR_ACTIVE_CONNS: u16 = 7;
pub const IPVS_DEST_ATTR_INACT_CONNS: u16 = 8;
pub const IPVS_DEST_ATTR_PERSIST_CONNS: u16 = 9;
pub const IPVS_DEST_ATTR_STATS: u16 = 10;
pub const IPVS_DEST_ATTR_ADDR_FAMILY: u16 = 11;
pub const IPVS_DEST_ATTR_STATS64: u16 = 12;
pub const IPVS_DEST_ATTR_TUN_TYPE: u16 = 13;
pub const IPVS_DEST_ATTR_TUN_PORT: u16 = 14;
pub const IPVS_DEST_ATTR_TUN_FLAGS: u16 = 15;

// Daemon attributes.
pub const IPVS_DAEMON_ATTR_STATE: u16 = 1;
pub const IPVS_DAEMON_ATTR_MCAST_IFN: u16 = 2;
pub const IPVS_DAEMON_ATTR_SYNC_ID: u16 = 3;
pub const IPVS_DAEMON_ATTR_SYNC_MAXLEN: u16 = 4;
pub const IPVS_DAEMON_ATTR_MCAST_GROUP: u16 = 5;
pub const IPVS_DAEMON_ATTR_MCAST_GROUP6: u16 = 6;
pub const IPVS_DAEMON_ATTR_MCAST_PORT: u16 = 7;
pub const IPVS_DAEMON_ATTR_MCAST_TTL: u16 = 8;

// Statistics attributes.
pub const IPVS_STATS_ATTR_CONNS: u16 = 1;
pub const IPVS_STATS_ATTR_INPKTS: u16 = 2;
pub const IPVS_STATS_ATTR_OUTPKTS: u16 = 3;
pub const IPVS_STATS_ATTR_INBYTES: u16 = 4;
pub const IPVS_STATS_ATTR_OUTBYTES: u16 = 5;
pub const IPVS_STATS_ATTR_CPS: u16 = 6;
pub const IPVS_STATS_ATTR_INPPS: u16 = 7;
pub const IPVS_STATS_ATTR_OUTPPS: u16 = 8;
pub const IPVS_STATS_ATTR_INBPS: u16 = 9;
pub const IPVS_STATS_ATTR_OUTBPS: u16 = 10;
pub const IPVS_STATS_ATTR_PAD: u16 = 11;

// Info attributes.
pub const IPVS_INFO_ATTR_VERSION: u16 = 1;
pub const IPVS_INFO_ATTR_CONN_TAB_SIZE: u16 = 2;

// Service flags.
pub const IP_VS_SVC_F_PERSISTENT: u32 = 0x0001;
pub const IP_VS_SVC_F_HASHED: u32 = 0x0002;
pub const IP_VS_SVC_F_ONEPACKET: u32 = 0x0004;
pub const IP_VS_SVC_F_SCHED1: u32 = 0x0008;
pub const IP_VS_SVC_F_SCHED2: u32 = 0x0010;
pub const IP_VS_SVC_F_SCHED3: u32 = 0x0020;
pub const IP_VS_SVC_F_SCHED_SH_FALLBACK: u32 = IP_VS_SVC_F_SCHED1;
pub const IP_VS_SVC_F_SCHED_SH_PORT: u32 = IP_VS_SVC_F_SCHED2;
pub const IP_VS_SVC_F_SCHED_MH_FALLBACK: u32 = IP_VS_SVC_F_SCHED1;
pub const IP_VS_SVC_F_SCHED_MH_PORT: u32 = IP_VS_SVC_F_SCHED2;
/// The scheduler flag bits.
pub const IP_VS_SVC_F_SCHED_MASK: u32 =
    IP_VS_SVC_F_SCHED1 | IP_VS_SVC_F_SCHED2 | IP_VS_SVC_F_SCHED3;

// Forwarding methods (connection flags).
pub const IP_VS_CONN_F_FWD_MASK: u32 = 0x0007;
pub const IP_VS_CONN_F_MASQ: u32 = 0x0000;
pub const IP_VS_CONN_F_LOCALNODE: u32 = 0x0001;
pub const IP_VS_CONN_F_TUNNEL: u32 = 0x0002;
pub const IP_VS_CONN_F_DROUTE: u32 = 0x0003;
pub const IP_VS_CONN_F_BYPASS: u32 = 0x0004;

// Tunnel types and encapsulation flags.
pub const IP_VS_CONN_F_TUNNEL_TYPE_IPIP: u8 = 0;
pub const IP_VS_CONN_F_TUNNEL_TYPE_GUE: u8 = 1;
pub const IP_VS_CONN_F_TUNNEL_TYPE_GRE: u8 = 2;
pub const IP_VS_TUNNEL_ENCAP_FLAG_NOCSUM: u16 = 0;
pub const IP_VS_TUNNEL_ENCAP_FLAG_CSUM: u16 = 1 << 0;
pub const IP_VS_TUNNEL_ENCAP_FLAG_REMCSUM: u16 = 1 << 1;

// Sync daemon states.
pub const IP_VS_STATE_NONE: u32 = 0;
pub const IP_VS_STATE_MASTER: u32 = 1;
pub const IP_VS_STATE_BACKUP: u32 = 2;

pub const IP_VS_SCHEDNAME_MAXLEN: usize = 16;
pub const IP_VS_PENAME_MAXLEN: usize = 16;
pub const IP_VS_IFNAME_MAXLEN: usize = 16;
pub const IP_VS_PEDATA_MAXLEN: usize = 255;

// Address families and protocols.
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;
pub const IPPROTO_TCP: u16 = 6;
pub const IPPROTO_UDP: u16 = 17;
pub const IPPROTO_SCTP: u16 = 132;
