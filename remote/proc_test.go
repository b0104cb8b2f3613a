package remote

import (
	"os"
	"strconv"
)

func readProcStat(pid int) (string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return string(data), err
}
