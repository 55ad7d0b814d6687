module blueprint-operator/tools/cron-oracle

go 1.22

require github.com/robfig/cron/v3 v3.0.1
