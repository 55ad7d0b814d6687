// cron-oracle reads cron cases as a JSON array on stdin and prints, for each,
// robfig/cron v3's verdict: the parse error, or the next `count` activations
// after `from` (each computed from the previous one), as Unix seconds.
//
// Input:  [{"spec": "*/5 * * * *", "tz": "Europe/Berlin", "from": 1780000000, "fromNanos": 0, "count": 3}, ...]
// Output: [{"error": "..."} | {"next": [1780000300, ...]}, ...]  (0 = no activation within 5 years)
//
// The time zone is applied as Kubernetes CronJob does: "TZ=<zone> " + spec.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/robfig/cron/v3"
)

type Case struct {
	Spec      string `json:"spec"`
	TZ        string `json:"tz"`
	From      int64  `json:"from"`
	FromNanos int64  `json:"fromNanos"`
	Count     int    `json:"count"`
}

type Result struct {
	Error *string `json:"error,omitempty"`
	Next  []int64 `json:"next,omitempty"`
}

func main() {
	var cases []Case
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "cron-oracle: bad input:", err)
		os.Exit(2)
	}
	out := make([]Result, len(cases))
	for i, c := range cases {
		tz := c.TZ
		if tz == "" {
			tz = "UTC"
		}
		sched, err := cron.ParseStandard("TZ=" + tz + " " + c.Spec)
		if err != nil {
			msg := err.Error()
			out[i].Error = &msg
			continue
		}
		t := time.Unix(c.From, c.FromNanos).UTC()
		out[i].Next = []int64{}
		for k := 0; k < c.Count; k++ {
			t = sched.Next(t)
			if t.IsZero() {
				out[i].Next = append(out[i].Next, 0)
				break
			}
			out[i].Next = append(out[i].Next, t.Unix())
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "cron-oracle:", err)
		os.Exit(1)
	}
}
