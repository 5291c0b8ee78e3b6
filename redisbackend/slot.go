package redisbackend

import "strings"

// keySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM: polynomial
// 0x1021, initial value 0) of the key's hash tag, or of the whole key
// without one, modulo 16384, as the Redis Cluster specification defines
// it ("Key distribution model", "Hash tags"). The hash tag is what lies
// between the first '{' and the first '}' after it, when that is not
// empty.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
}
