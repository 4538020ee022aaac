# tshark's options for checking a capture of RoCE traffic (sourced, not run). Sets the array
# TSHARK_CHECK: numeric output, IP and UDP checksums verified, and the heuristic upper-layer
# dissectors over InfiniBand off. Payloads are the programs' own bytes, and those dissectors (RPC
# over RDMA, SMB Direct, iSER, ...) misread some of them (perftest's 8-byte SENDs as a malformed
# RPCoRDMA header); the InfiniBand headers are still decoded and checked in full.
# shellcheck disable=SC2034
TSHARK_CHECK=(-n -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE)
for _h in eth_over_ib fc_infiniband iser_infiniband lnet_ib rpcrdma_infiniband sdp_infiniband \
	smb_direct_infiniband smcr_infiniband mellanox_eoib; do
	TSHARK_CHECK+=(--disable-heuristic "$_h")
done
unset _h
