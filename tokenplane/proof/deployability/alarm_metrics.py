"""Every CloudWatch alarm on an AWS service's metric names a metric the service publishes.

A CloudWatch alarm watches one exact metric: its namespace, its name and its whole set of dimensions. PutMetricAlarm
accepts any of them, because a metric exists once something publishes it; an alarm on a metric no one publishes
sits in INSUFFICIENT_DATA forever (or in OK, with ``treatMissingData: notBreaching``) and never fires. The AWS
services publish their metrics under fixed dimension names (each service's "metrics and dimensions" page, e.g.
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html:
SQS's only dimension is ``QueueName``), so an alarm on ``AWS/SQS`` with a ``QueueUrl`` dimension, or a
``QueueName`` of a queue's URL or ARN, watches nothing. Judged for the ``AWS/*`` namespaces in ``DIMENSIONS`` (and
SQS's metric names); custom namespaces may have any dimension.

A dimension whose value names a resource of the program must hold that resource's identifier for the dimension. An
EKS managed node group's instances run in an Auto Scaling group EKS creates and names ``eks-<node group>-<uuid>``
(https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html: "Amazon EKS tags managed node group
resources ... the Auto Scaling group"; the name is DescribeNodegroup's ``resources.autoScalingGroups[].name``,
https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupResources.html), so an ``AutoScalingGroupName`` of
the node group's own name (``nodeGroupName``) matches no EC2 or Auto Scaling metric: the node group's
``resources[0].autoscalingGroups[0].name`` output does. Likewise an ``AWS/RDS`` ``DBInstanceIdentifier`` of an
``aws.rds.Instance``'s ``id``: since pulumi-aws v6 (terraform-provider-aws v5) the id is the DBI resource id
(``db-...``), while RDS publishes under the DB instance identifier, the ``identifier`` output
(hashicorp/terraform-provider-aws#31232; https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/dimensions.html).

RDS publishes some instance metrics only for some instances (https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-metrics.html):
``ReplicaLag`` "For read replica configurations, the amount of time a read replica DB instance lags behind the source
DB instance", so only for an instance with ``replicateSourceDb``, never for its source; ``BinLogDiskUsage`` for
MySQL and MariaDB; ``MaximumUsedTransactionIDs``, ``OldestReplicationSlotLag``, ``ReplicationSlotDiskUsage``,
``TransactionLogsDiskUsage`` and ``TransactionLogsGeneration`` for PostgreSQL ("Applies to" on that page). An
alarm on one of them for another of the program's instances watches a series that never has data (with missing
data as breaching it pages at once and for ever). A replica's engine is its source's.

Elastic Load Balancing publishes under the final portion of each ARN: ``LoadBalancer`` is ``app/NAME/ID`` (an
Application Load Balancer, ``AWS/ApplicationELB``) or ``net/NAME/ID`` (a Network one, ``AWS/NetworkELB``), and
``TargetGroup`` is ``targetgroup/NAME/ID`` ("CloudWatch metrics for your Application Load Balancer", Metric
dimensions: "The value is the final portion of the load balancer ARN";
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-cloudwatch-metrics.html, and the
Network Load Balancer's page). The provider's ``arn_suffix`` output is that portion; an alarm given the ``arn``,
the ``name`` or the other kind's balancer watches nothing.

A dimension whose value is a resource of the program must sit in the namespace that resource type publishes to:
an Application Load Balancer's ``arn_suffix`` under ``AWS/ApplicationELB``, a Network one's under
``AWS/NetworkELB``, a target group's under its load balancer type's (HTTP/HTTPS and Lambda target groups are an ALB's,
TCP/TLS/UDP ones an NLB's), a Classic Load Balancer's name under ``AWS/ELB`` as ``LoadBalancerName``, a queue's name
under ``AWS/SQS``, a function's under ``AWS/Lambda``, a topic's under ``AWS/SNS``, a table's under ``AWS/DynamoDB``,
a stream's under ``AWS/Kinesis`` (``RESOURCE_HOMES``). ``AWS/ELB`` holds Classic Load Balancer metrics only, keyed
by ``LoadBalancerName`` and ``AvailabilityZone``, and named without the ALB's ``_Count`` suffix (``HTTPCode_ELB_5XX``,
``HTTPCode_Backend_5XX``, ``Latency``: "CloudWatch metrics for your Classic Load Balancer",
https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-cloudwatch-metrics.html), so an alarm there on an
ALB's ``LoadBalancer`` (``HTTPCode_ELB_5XX_Count``) watches nothing; likewise a Classic metric name under
``AWS/ApplicationELB`` or ``AWS/NetworkELB``, whose metrics are named otherwise
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-cloudwatch-metrics.html). Judged
for the ``AWS/*`` namespaces of ``DIMENSIONS`` only, and only where no resource of the program with that value
publishes to the alarm's namespace (two resources may share a name).

The ``ContainerInsights`` namespace is published by Container Insights, not by EKS or ECS themselves: on EKS by the
CloudWatch agent (the ``amazon-cloudwatch-observability`` add-on or Helm chart, or the agent's own DaemonSet), on
ECS by the cluster's ``containerInsights`` setting ("Metrics do not appear before Container Insights has been set up
completely", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-EKS.html;
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/deploy-container-insights-EKS.html). An alarm on it
in a program that installs none of these watches a metric that never exists. metrics-server serves the Kubernetes
metrics API, not CloudWatch. Cannot see: an agent installed outside the program (then waive the finding).

Some metrics are published only at a fixed coarse interval, one datapoint per interval: S3's storage metrics
(``AWS/S3`` ``BucketSizeBytes`` and ``NumberOfObjects``) once a day ("Amazon S3 CloudWatch daily storage metrics for
buckets ... reported once per day", https://docs.aws.amazon.com/AmazonS3/latest/userguide/metrics-dimensions.html).
An alarm evaluates the last ``period`` x ``evaluationPeriods`` seconds (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarm-evaluation),
so one whose window is shorter than the interval holds no datapoint most of the time: it sits in INSUFFICIENT_DATA
(or flaps with it) and does not fire when the metric crosses its threshold. Judged where ``period`` and
``evaluationPeriods`` are known (``COARSE_METRICS``: only intervals with a public source).

S3 publishes each metric under one exact set of dimensions ("Metrics and dimensions",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/metrics-dimensions.html): its daily storage metrics
(``BucketSizeBytes``, ``NumberOfObjects``) per ``BucketName`` and ``StorageType`` (``NumberOfObjects`` only for
``AllStorageTypes``, ``BucketSizeBytes`` per storage class: ``StandardStorage``, ``StandardIAStorage``, ..., never
``AllStorageTypes``), and its request metrics (``AllRequests``, ``GetRequests``, ``4xxErrors``, ``5xxErrors``,
``FirstByteLatency``, ``BytesDownloaded``, ...) per ``BucketName`` and ``FilterId``. A CloudWatch metric is the
whole set of its dimensions, so an alarm on a storage metric without ``StorageType``, or on a request metric without
``FilterId``, matches no metric. Request metrics are published at all only for a bucket with a request-metrics
configuration (PutBucketMetricsConfiguration, ``aws.s3.BucketMetric``), under its id as ``FilterId``
("Creating a CloudWatch metrics configuration for all the objects in your bucket",
https://docs.aws.amazon.com/AmazonS3/latest/userguide/configure-request-metrics-bucket.html; "CloudWatch metrics
configurations", https://docs.aws.amazon.com/AmazonS3/latest/userguide/metrics-configurations.html): an alarm whose
``FilterId`` names no configuration of the bucket watches nothing. Judged for the program's own general purpose
buckets only (``BucketName`` one of its ``aws.s3.Bucket``/``BucketV2``; directory buckets publish otherwise); cannot see a metrics configuration made outside the
program (the console, another stack): then waive the finding.

A metric that exists may still never move for its resource as configured: a dead-letter queue's
NumberOfMessagesSent, where only SQS's redrive fills the queue (``dead_letter_alarms``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.dead_letter_alarms import redrive_only
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, NODE_GROUP, Graph
from tokenplane.proof.render import RenderedResource, mock_outputs, physical_id

RULE = "alarm-metric-exists"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
ASG_DIMENSION = "AutoScalingGroupName"
RDS_DIMENSION = "DBInstanceIdentifier"
RDS_INSTANCE = "aws:rds/instance:Instance"
# AWS/RDS instance metrics published only for read replicas, and those of some engines only (the page above).
RDS_REPLICA_METRICS = frozenset({"ReplicaLag"})
RDS_ENGINE_METRICS = {
    "BinLogDiskUsage": frozenset({"mysql", "mariadb"}),
    "MaximumUsedTransactionIDs": frozenset({"postgres"}),
    "OldestReplicationSlotLag": frozenset({"postgres"}),
    "ReplicationSlotDiskUsage": frozenset({"postgres"}),
    "TransactionLogsDiskUsage": frozenset({"postgres"}),
    "TransactionLogsGeneration": frozenset({"postgres"}),
}
ELB_DIMENSION, TARGET_GROUP_DIMENSION = "LoadBalancer", "TargetGroup"
ELB_KINDS = {"AWS/ApplicationELB": "app", "AWS/NetworkELB": "net"}  # namespace -> its balancers' ARN kind
CONTAINER_INSIGHTS = "ContainerInsights"
ADDON = "aws:eks/addon:Addon"
CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"
# Helm charts that install the CloudWatch agent with Container Insights (aws-observability/helm-charts, eks-charts).
CLOUDWATCH_CHARTS = ("amazon-cloudwatch-observability", "aws-cloudwatch-metrics")
CLOUDWATCH_AGENT = "cloudwatch-agent"  # the agent's image, amazon/cloudwatch-agent
ECS_CLUSTER = "aws:ecs/cluster:Cluster"
ECS_ACCOUNT_SETTING = "aws:ecs/accountSettingDefault:AccountSettingDefault"
# (namespace, metric) -> seconds between the datapoints the service publishes, and what it says: S3's daily storage
# metrics (https://docs.aws.amazon.com/AmazonS3/latest/userguide/metrics-dimensions.html).
COARSE_METRICS = {
    ("AWS/S3", "BucketSizeBytes"): (86400, "S3 publishes its storage metrics once a day"),
    ("AWS/S3", "NumberOfObjects"): (86400, "S3 publishes its storage metrics once a day"),
}
# S3's metrics and the exact dimension sets they are published under (the S3 metrics page above).
S3_STORAGE_METRICS = frozenset({"BucketSizeBytes", "NumberOfObjects"})
S3_REQUEST_METRICS = frozenset(
    {
        "AllRequests",
        "GetRequests",
        "PutRequests",
        "DeleteRequests",
        "HeadRequests",
        "PostRequests",
        "SelectRequests",
        "SelectBytesScanned",
        "SelectBytesReturned",
        "ListRequests",
        "BytesDownloaded",
        "BytesUploaded",
        "4xxErrors",
        "5xxErrors",
        "FirstByteLatency",
        "TotalRequestLatency",
    }
)
S3_STORAGE_DIMENSIONS = frozenset({"BucketName", "StorageType"})
S3_REQUEST_DIMENSIONS = frozenset({"BucketName", "FilterId"})
S3_ALL_STORAGE_TYPES = "AllStorageTypes"  # NumberOfObjects' only StorageType, and never BucketSizeBytes'
# S3 storage class names (the API's) -> the StorageType S3 publishes BucketSizeBytes of that class under.
S3_STORAGE_CLASSES = {
    "STANDARD": "StandardStorage",
    "STANDARD_IA": "StandardIAStorage",
    "ONEZONE_IA": "OneZoneIAStorage",
    "REDUCED_REDUNDANCY": "ReducedRedundancyStorage",
    "INTELLIGENT_TIERING": "IntelligentTieringFAStorage",
    "GLACIER_IR": "GlacierInstantRetrievalStorage",
    "GLACIER": "GlacierStorage",
    "DEEP_ARCHIVE": "DeepArchiveStorage",
}
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
BUCKET_METRIC = "aws:s3/bucketMetric:BucketMetric"
# Namespace -> the dimension names its metrics carry (each service's CloudWatch metrics page).
DIMENSIONS: dict[str, frozenset[str]] = {
    "AWS/SQS": frozenset({"QueueName"}),
    "AWS/SNS": frozenset({"TopicName", "Application", "Platform", "Country", "SMSType"}),
    "AWS/Lambda": frozenset({"FunctionName", "Resource", "ExecutedVersion"}),
    "AWS/DynamoDB": frozenset(
        {
            "TableName",
            "GlobalSecondaryIndexName",
            "Operation",
            "OperationType",
            "ReceivingRegion",
            "StreamLabel",
            "Verb",
            "DelegatedOperation",
        }
    ),
    "AWS/ApplicationELB": frozenset({"LoadBalancer", "TargetGroup", "AvailabilityZone"}),
    "AWS/NetworkELB": frozenset({"LoadBalancer", "TargetGroup", "AvailabilityZone"}),
    "AWS/ELB": frozenset({"LoadBalancerName", "AvailabilityZone"}),  # Classic Load Balancers only
    "AWS/EC2": frozenset({"InstanceId", "AutoScalingGroupName", "ImageId", "InstanceType"}),
    "AWS/AutoScaling": frozenset({"AutoScalingGroupName"}),
    "AWS/EBS": frozenset({"VolumeId"}),
    "AWS/ElastiCache": frozenset({"CacheClusterId", "CacheNodeId", "ReplicationGroupId"}),
    "AWS/Kafka": frozenset({"Cluster Name", "Broker ID", "Topic", "Consumer Group", "Client Authentication"}),
    # Storage and request metrics, and replication metrics (SourceBucket, DestinationBucket, RuleId).
    "AWS/S3": frozenset({"BucketName", "StorageType", "FilterId", "SourceBucket", "DestinationBucket", "RuleId"}),
    "AWS/Logs": frozenset({"LogGroupName", "DestinationType", "FilterName"}),
    "AWS/Events": frozenset({"RuleName", "EventBusName", "EventSourceName"}),
    "AWS/Kinesis": frozenset({"StreamName", "ShardId"}),
    "AWS/Firehose": frozenset({"DeliveryStreamName"}),
    "AWS/NATGateway": frozenset({"NatGatewayId"}),
    "AWS/EFS": frozenset({"FileSystemId", "StorageClass"}),
    "AWS/Route53": frozenset({"HealthCheckId"}),
    "AWS/CertificateManager": frozenset({"CertificateArn"}),
    "AWS/RDS": frozenset(
        {"DBInstanceIdentifier", "DBClusterIdentifier", "DatabaseClass", "EngineName", "SourceRegion", "Role"}
    ),
}
# Dimensions whose value is a resource's name, not its URL or ARN.
NAMED = frozenset(
    {
        "QueueName",
        "TopicName",
        "FunctionName",
        "TableName",
        "BucketName",
        "LogGroupName",
        "RuleName",
        "StreamName",
        "DeliveryStreamName",
        "LoadBalancerName",
    }
)
# The metrics SQS publishes (the page above): a misspelt one is a metric no one publishes.
SQS_METRICS = frozenset(
    {
        "ApproximateAgeOfOldestMessage",
        "ApproximateNumberOfMessagesDelayed",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfGroupsWithInflightMessages",
        "NumberOfEmptyReceives",
        "NumberOfMessagesDeleted",
        "NumberOfMessagesReceived",
        "NumberOfMessagesSent",
        "NumberOfDeduplicatedSentMessages",
        "SentMessageSize",
    }
)

# The metrics a Classic Load Balancer publishes (AWS/ELB; the Classic page above), none of them an ALB's or NLB's.
CLASSIC_METRICS = frozenset(
    {
        "BackendConnectionErrors",
        "DesyncMitigationMode_NonCompliant_Request_Count",
        "EstimatedALBActiveConnectionCount",
        "EstimatedALBConsumedLCUs",
        "EstimatedALBNewConnectionCount",
        "EstimatedProcessedBytes",
        "HealthyHostCount",
        "HTTPCode_Backend_2XX",
        "HTTPCode_Backend_3XX",
        "HTTPCode_Backend_4XX",
        "HTTPCode_Backend_5XX",
        "HTTPCode_ELB_4XX",
        "HTTPCode_ELB_5XX",
        "Latency",
        "RequestCount",
        "SpilloverCount",
        "SurgeQueueLength",
        "UnHealthyHostCount",
    }
)
# Classic names an ALB does not publish, and the ALB metric of the same meaning (the two metrics pages).
CLASSIC_TO_ALB = {
    "HTTPCode_ELB_4XX": "HTTPCode_ELB_4XX_Count",
    "HTTPCode_ELB_5XX": "HTTPCode_ELB_5XX_Count",
    "HTTPCode_Backend_2XX": "HTTPCode_Target_2XX_Count",
    "HTTPCode_Backend_3XX": "HTTPCode_Target_3XX_Count",
    "HTTPCode_Backend_4XX": "HTTPCode_Target_4XX_Count",
    "HTTPCode_Backend_5XX": "HTTPCode_Target_5XX_Count",
    "Latency": "TargetResponseTime",
    "BackendConnectionErrors": "TargetConnectionErrorCount",
    "SpilloverCount": "RejectedConnectionCount",
    "SurgeQueueLength": "",
    "EstimatedALBActiveConnectionCount": "ActiveConnectionCount",
    "EstimatedALBConsumedLCUs": "ConsumedLCUs",
    "EstimatedALBNewConnectionCount": "NewConnectionCount",
    "EstimatedProcessedBytes": "ProcessedBytes",
}
ALB_TO_CLASSIC = {alb: classic for classic, alb in CLASSIC_TO_ALB.items() if alb}
LB_TYPES = ("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")
TG_TYPES = ("aws:lb/targetGroup:TargetGroup", "aws:alb/targetGroup:TargetGroup")
LB_NAMESPACES = {"application": "AWS/ApplicationELB", "network": "AWS/NetworkELB", "gateway": "AWS/GatewayELB"}
TG_NAMESPACES = {
    **dict.fromkeys(("HTTP", "HTTPS"), "AWS/ApplicationELB"),
    **dict.fromkeys(("TCP", "TLS", "UDP", "TCP_UDP"), "AWS/NetworkELB"),
    "GENEVE": "AWS/GatewayELB",
}
# Resource type -> (what it is, its namespace, the dimension it publishes under, the output that dimension holds).
RESOURCE_HOMES: dict[str, tuple[str, str, str, str]] = {
    "aws:elb/loadBalancer:LoadBalancer": ("Classic Load Balancer", "AWS/ELB", "LoadBalancerName", "name"),
    "aws:sqs/queue:Queue": ("SQS queue", "AWS/SQS", "QueueName", "name"),
    "aws:lambda/function:Function": ("Lambda function", "AWS/Lambda", "FunctionName", "name"),
    "aws:sns/topic:Topic": ("SNS topic", "AWS/SNS", "TopicName", "name"),
    "aws:dynamodb/table:Table": ("DynamoDB table", "AWS/DynamoDB", "TableName", "name"),
    "aws:kinesis/stream:Stream": ("Kinesis stream", "AWS/Kinesis", "StreamName", "name"),
}
# The dimensions that name one resource: a value of one of the program's resources there is judged by its home.
RESOURCE_DIMENSIONS = frozenset({"LoadBalancer", "TargetGroup"} | {home[2] for home in RESOURCE_HOMES.values()})


def check(graph: Graph) -> Iterator[Finding]:
    for alarm in graph.of_type(ALARM):
        for namespace, metric, dimensions in _metrics(alarm):
            problem = (
                _elb_dimension(namespace, dimensions)
                or _resource_namespace(graph, namespace, metric, dimensions)
                or _problem(namespace, metric, dimensions)
                or _s3_metric(graph, namespace, metric, dimensions)
                or _classic_metric(namespace, metric)
                or _node_group_as_asg(graph, dimensions)
                or _rds_resource_id(graph, dimensions)
                or _rds_instance_metric(graph, namespace, metric, dimensions)
                or _container_insights(graph, namespace)
            )
            if problem is not None:
                what, fix = problem
                stays = (
                    "it goes to ALARM at once and stays there (treatMissingData breaching), paging for nothing"
                    if alarm.inputs.get("treatMissingData") == "breaching"
                    else "it stays in INSUFFICIENT_DATA and never fires"
                )
                yield Finding(
                    RULE,
                    alarm.urn,
                    f"alarm {alarm.inputs.get('name') or alarm.name} watches {namespace} {metric} with "
                    f"{_shown(dimensions)}: {what}; CloudWatch accepts the alarm, but no metric of that name and "
                    f"dimensions is ever published, so {stays}",
                    fix,
                )
                continue
            # A metric published too coarsely for the alarm's window, else one only a redrive would publish.
            reason = _coarse_window(alarm, namespace, metric) or redrive_only(graph, namespace, metric, dimensions)
            if reason is not None:
                what, fix = reason
                yield Finding(
                    RULE,
                    alarm.urn,
                    f"alarm {alarm.inputs.get('name') or alarm.name} watches {namespace} {metric} with "
                    f"{_shown(dimensions)}: {what}",
                    fix,
                )


def _metrics(alarm: RenderedResource) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric name, dimensions) of the alarm's metric, or of each metric of its math expression."""
    inputs = alarm.inputs
    if isinstance(inputs.get("namespace"), str) and isinstance(inputs.get("metricName"), str):
        yield inputs["namespace"], inputs["metricName"], dict(inputs.get("dimensions") or {})
    for query in inputs.get("metricQueries") or []:
        metric = (query.get("metric") or {}) if isinstance(query, dict) else {}
        if isinstance(metric.get("namespace"), str) and isinstance(metric.get("metricName"), str):
            yield metric["namespace"], metric["metricName"], dict(metric.get("dimensions") or {})


def _coarse_window(alarm: RenderedResource, namespace: str, metric: str) -> tuple[str, str] | None:
    """A metric published once per interval, on an alarm whose window (period x evaluationPeriods) is shorter."""
    coarse = COARSE_METRICS.get((namespace, metric))
    period, periods = _number(alarm.inputs.get("period")), _number(alarm.inputs.get("evaluationPeriods"))
    if coarse is None or period is None or periods is None:
        return None
    interval, says = coarse
    if period * periods >= interval:
        return None
    return (
        f"{says} (one datapoint every {interval:g} s), and the alarm evaluates {period:g} s x {periods:g} "
        f"period(s) = {period * periods:g} s, so its window holds no datapoint most of the time: it sits in "
        "INSUFFICIENT_DATA and does not fire when the metric crosses its threshold (CloudWatch accepts it)",
        f"set period to {interval:g} (with evaluationPeriods 1), the metric's publishing interval",
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _problem(namespace: str, metric: str, dimensions: dict[str, Any]) -> tuple[str, str] | None:
    known = DIMENSIONS.get(namespace)
    if known is None:
        return None
    if unknown := sorted(set(dimensions) - known):
        return (
            f"{namespace} publishes no dimension {', '.join(unknown)} (its dimensions: {', '.join(sorted(known))})",
            f"use {namespace}'s own dimension names ({', '.join(sorted(known))})",
        )
    for key in sorted(set(dimensions) & NAMED):
        value = str(dimensions[key])
        if value.startswith(("https://", "http://", "arn:")):
            return (
                f"its {key} is {value!r}, a URL or ARN where {namespace} puts the resource's name",
                f"set {key} to the resource's name (e.g. the queue's name output, not its url or arn)",
            )
    # Every other dimension of these namespaces carries a name or an id too (an MSK cluster's "Cluster Name", a
    # cache's CacheClusterId, a NAT gateway's id), except those named for an ARN: an ARN there matches nothing.
    for key in sorted(set(dimensions) - NAMED - {"LoadBalancer", "TargetGroup"}):
        value = str(dimensions[key])
        if value.startswith("arn:") and not key.endswith("Arn"):
            return (
                f"its {key} is {value!r}, an ARN where {namespace} puts the resource's name or id",
                f"set {key} to the resource's name or id output (for an MSK cluster its cluster_name), not its arn",
            )
    if namespace == "AWS/SQS" and metric not in SQS_METRICS:
        return (f"SQS publishes no metric {metric!r}", f"use one of SQS's metrics ({', '.join(sorted(SQS_METRICS))})")
    return None


def _s3_metric(graph: Graph, namespace: str, metric: str, dimensions: dict[str, Any]) -> tuple[str, str] | None:
    """For a general purpose bucket of the program: an S3 metric without its exact dimension set, a StorageType it is
    not published for, or a request metric with no request-metrics configuration of that FilterId."""
    if namespace != "AWS/S3":
        return None
    storage = metric in S3_STORAGE_METRICS
    if not storage and metric not in S3_REQUEST_METRICS:
        return None
    if _bucket(graph, dimensions.get("BucketName")) is None:
        return None  # judged for the program's own general purpose buckets only
    wanted = S3_STORAGE_DIMENSIONS if storage else S3_REQUEST_DIMENSIONS
    if set(dimensions) != wanted:
        missing, extra = sorted(wanted - set(dimensions)), sorted(set(dimensions) - wanted)
        lacks = f"the alarm lacks {', '.join(missing)}" if missing else ""
        more = f"{' and ' if lacks else 'the alarm '}adds {', '.join(extra)}" if extra else ""
        kind = "daily storage metric" if storage else "request metric"
        ids = None if storage else _s3_filter_ids(graph, dimensions.get("BucketName"))
        if storage:
            fix = (
                "set the dimensions to exactly BucketName and StorageType ("
                + ("AllStorageTypes" if metric == "NumberOfObjects" else "StandardStorage, or the storage class's")
                + ")"
            )
        else:
            fix = (
                f"set the dimensions to exactly BucketName and FilterId, the id of one of the bucket's request-metrics "
                f"configurations ({', '.join(ids)})"
                if ids
                else "add a request-metrics configuration to the bucket (aws.s3.BucketMetric, e.g. name EntireBucket) "
                "and set the dimensions to exactly BucketName and FilterId (the configuration's name)"
            )
        published = (
            " (and only for a bucket with a request-metrics configuration, whose id is the FilterId"
            + ("; the program gives this bucket none)" if ids == [] else ")")
            if not storage
            else ""
        )
        return (
            f"S3 publishes its {kind} {metric} only with the dimensions {' and '.join(sorted(wanted))}{published}, "
            f"and {lacks}{more}",
            fix,
        )
    if storage:
        return _s3_storage_type(metric, dimensions.get("StorageType"))
    return _s3_request_filter(graph, metric, dimensions)


def _s3_storage_type(metric: str, value: Any) -> tuple[str, str] | None:
    if not isinstance(value, str):
        return None
    if metric == "NumberOfObjects" and value != S3_ALL_STORAGE_TYPES:
        return (
            f"S3 publishes NumberOfObjects only with StorageType {S3_ALL_STORAGE_TYPES}, not {value!r}",
            f"set StorageType to {S3_ALL_STORAGE_TYPES}",
        )
    if metric == "BucketSizeBytes" and value == S3_ALL_STORAGE_TYPES:
        return (
            f"S3 publishes BucketSizeBytes per storage class (StandardStorage, StandardIAStorage, ...), never with "
            f"StorageType {S3_ALL_STORAGE_TYPES} (that is NumberOfObjects')",
            "set StorageType to the storage class's (StandardStorage for S3 Standard), one alarm per class, or sum "
            "them in a metric math expression",
        )
    if value in S3_STORAGE_CLASSES:
        return (
            f"StorageType {value!r} is the storage class's API name, and S3 publishes {metric} under its own "
            f"StorageType names ({S3_STORAGE_CLASSES[value]} for {value})",
            "set StorageType to "
            + (S3_ALL_STORAGE_TYPES if metric == "NumberOfObjects" else repr(S3_STORAGE_CLASSES[value])),
        )
    return None


def _s3_request_filter(graph: Graph, metric: str, dimensions: dict[str, Any]) -> tuple[str, str] | None:
    """A request metric whose FilterId no request-metrics configuration of the program's bucket has."""
    name, filter_id = dimensions.get("BucketName"), dimensions.get("FilterId")
    if not isinstance(name, str) or not isinstance(filter_id, str):
        return None
    bucket = _bucket(graph, name)
    ids = _s3_filter_ids(graph, name)
    if bucket is None or ids is None or filter_id in ids:
        return None
    has = (
        f"its request-metrics configurations are {', '.join(ids)}"
        if ids
        else "the program gives it no request-metrics configuration (aws.s3.BucketMetric)"
    )
    return (
        f"S3 publishes request metrics such as {metric} only for a bucket with a request-metrics configuration, "
        f"under the configuration's id as FilterId, and bucket {bucket.name} has none with id {filter_id!r}: {has}",
        (
            f"set FilterId to one of {', '.join(ids)}"
            if ids
            else f"add an aws.s3.BucketMetric on {bucket.name} named {filter_id!r} (e.g. EntireBucket, no filter) "
            "and set the alarm's FilterId to its name"
        ),
    )


def _s3_filter_ids(graph: Graph, name: Any) -> list[str] | None:
    """The ids of the request-metrics configurations of the program's bucket ``name``; None where the bucket is not
    the program's or a configuration's id is unknown at render time."""
    bucket = _bucket(graph, name)
    if bucket is None:
        return None
    configurations = [
        c
        for c in graph.of_type(BUCKET_METRIC)
        if c.inputs.get("bucket") == name or _bucket(graph, c.inputs.get("bucket")) is bucket
    ]
    if any(not isinstance(c.inputs.get("name"), str) for c in configurations):
        return None
    return sorted(str(c.inputs["name"]) for c in configurations)


def _bucket(graph: Graph, value: Any) -> RenderedResource | None:
    """The program's bucket that a name or id names, if any."""
    if not isinstance(value, str) or not value:
        return None
    found = graph.by_identifying_output.get(value) or graph.by_physical_id.get(value)
    return found if found is not None and found.type in BUCKETS else None


def _resource_namespace(
    graph: Graph, namespace: str, metric: str, dimensions: dict[str, Any]
) -> tuple[str, str] | None:
    """A dimension holding a resource of the program whose type publishes to another namespace."""
    if namespace not in DIMENSIONS:
        return None
    homes = _homes(graph)
    for key in sorted(set(dimensions) & RESOURCE_DIMENSIONS):
        value = dimensions[key]
        found = homes.get(value) if isinstance(value, str) else None
        if not found or any(home[1] == namespace for _, home in found):
            continue
        resource, (kind, home, dimension, output) = found[0]
        output = "arn_suffix" if output == "arnSuffix" else output
        same = ALB_TO_CLASSIC.get(metric) if home == "AWS/ELB" else CLASSIC_TO_ALB.get(metric)
        named = f" (its {metric} there is {same})" if same else ""
        if home == "AWS/ApplicationELB" and metric in ALB_TO_CLASSIC:
            named = f" ({metric} is one)"
        classic = (
            "; AWS/ELB holds Classic Load Balancer metrics only, keyed by LoadBalancerName"
            if namespace == "AWS/ELB"
            else ""
        )
        return (
            f"its {key} {value!r} is {kind} {resource.name}'s {output}, and {kind}s publish their metrics to {home} "
            f"under {dimension}, never to {namespace}{classic}",
            f"set the namespace to {home}, the dimension {dimension} to {resource.name}'s {output} output, and the "
            f"metric to one {home} publishes{named}",
        )
    return None


def _homes(graph: Graph) -> dict[str, list[tuple[RenderedResource, tuple[str, str, str, str]]]]:
    """Each value that names one of the program's resources (its name, an ELB's arn_suffix) -> the resources, with
    the namespace and dimension their metrics are published under."""
    out: dict[str, list[tuple[RenderedResource, tuple[str, str, str, str]]]] = {}
    for resource in graph.resources:
        home = _home(resource)
        if home is None:
            continue
        _, outputs = mock_outputs(
            resource.type, resource.name, resource.inputs, graph.cloud_region(resource.region) or ""
        )
        values = {outputs.get(home[3]), outputs.get("name"), resource.inputs.get("name")}
        values.add(physical_id(resource.type, resource.name).removesuffix("-id"))
        for value in values:
            if isinstance(value, str) and value:
                out.setdefault(value, []).append((resource, home))
    return out


def _home(resource: RenderedResource) -> tuple[str, str, str, str] | None:
    """(what it is, namespace, dimension, output) for a resource whose metrics CloudWatch publishes by one value."""
    if resource.type in LB_TYPES:
        kind = str(resource.inputs.get("loadBalancerType") or "application")
        namespace = LB_NAMESPACES.get(kind)
        what = {"application": "Application", "network": "Network", "gateway": "Gateway"}.get(kind, "")
        return (f"{what} Load Balancer", namespace, "LoadBalancer", "arnSuffix") if namespace else None
    if resource.type in TG_TYPES:
        protocol = resource.inputs.get("protocol")
        lambda_targets = resource.inputs.get("targetType") == "lambda"
        namespace = "AWS/ApplicationELB" if lambda_targets else TG_NAMESPACES.get(str(protocol))
        return ("target group", namespace, "TargetGroup", "arnSuffix") if namespace else None
    return RESOURCE_HOMES.get(resource.type)


def _classic_metric(namespace: str, metric: str) -> tuple[str, str] | None:
    """A Classic Load Balancer metric name under ELBv2's namespaces, or another name under AWS/ELB."""
    if namespace == "AWS/ELB" and metric not in CLASSIC_METRICS:
        alb = (
            f"; {metric} is an Application Load Balancer's metric, in AWS/ApplicationELB"
            if metric in ALB_TO_CLASSIC
            else ""
        )
        return (
            f"AWS/ELB (Classic Load Balancers) publishes no metric {metric!r}{alb}",
            f"use one of AWS/ELB's metrics ({', '.join(sorted(CLASSIC_METRICS))}), or for an ALB the namespace "
            "AWS/ApplicationELB with its LoadBalancer arn_suffix",
        )
    if namespace in ("AWS/ApplicationELB", "AWS/NetworkELB") and metric in CLASSIC_TO_ALB:
        same = CLASSIC_TO_ALB[metric]
        return (
            f"{metric} is a Classic Load Balancer metric (AWS/ELB); {namespace} publishes no metric of that name",
            f"use {namespace}'s own metric" + (f" ({same} on an Application Load Balancer)" if same else ""),
        )
    return None


def _node_group_as_asg(graph: Graph, dimensions: dict[str, Any]) -> tuple[str, str] | None:
    """An AutoScalingGroupName that is a managed node group's name: EKS names its group eks-<name>-<uuid>."""
    value = dimensions.get(ASG_DIMENSION)
    if not isinstance(value, str):
        return None
    named = graph.by_physical_id.get(value)
    group = next(
        (
            r
            for r in graph.of_type(NODE_GROUP)
            if r.inputs.get("nodeGroupName") == value or (named is not None and named.urn == r.urn)
        ),
        None,
    )
    if group is None:
        return None
    return (
        f"{ASG_DIMENSION} {value!r} is the name of EKS managed node group {group.name}, whose instances run in an "
        "Auto Scaling group EKS names eks-<node group>-<uuid>",
        f"set {ASG_DIMENSION} to the node group's Auto Scaling group name (its "
        "resources[0].autoscalingGroups[0].name output), not its nodeGroupName",
    )


def _rds_resource_id(graph: Graph, dimensions: dict[str, Any]) -> tuple[str, str] | None:
    """A DBInstanceIdentifier that is an RDS instance's resource id (its ``id``), not its identifier."""
    value = dimensions.get(RDS_DIMENSION)
    named = graph.by_physical_id.get(value) if isinstance(value, str) else None
    if named is None or named.type != RDS_INSTANCE or named.inputs.get("identifier") == value:
        return None
    return (
        f"{RDS_DIMENSION} {value!r} is RDS instance {named.name}'s id, its DBI resource id (db-...) since pulumi-aws "
        "v6, while RDS publishes its metrics under the DB instance identifier",
        f"set {RDS_DIMENSION} to the instance's identifier output ({named.name}.identifier), not its id",
    )


def _rds_instance_metric(
    graph: Graph, namespace: str, metric: str, dimensions: dict[str, Any]
) -> tuple[str, str] | None:
    """A replica-only metric on an instance that replicates nothing, or an engine's metric on another engine."""
    value = dimensions.get(RDS_DIMENSION)
    if namespace != "AWS/RDS" or not isinstance(value, str):
        return None
    instance = graph.by_identifying_output.get(value)
    if instance is None or instance.type != RDS_INSTANCE:
        return None
    if metric in RDS_REPLICA_METRICS and not instance.inputs.get("replicateSourceDb"):
        replicas = [
            r.name
            for r in graph.of_type(RDS_INSTANCE)
            if graph.by_identifying_output.get(str(r.inputs.get("replicateSourceDb"))) is instance
        ]
        watch = f"the replica's identifier ({replicas[0]}.identifier)" if replicas else "a read replica's identifier"
        return (
            f"{metric} is published only for a read replica (how far it lags its source), and {instance.name} is "
            "not one (no replicateSourceDb)" + (f": it is the source of {', '.join(replicas)}" if replicas else ""),
            f"set {RDS_DIMENSION} to {watch}",
        )
    engines = RDS_ENGINE_METRICS.get(metric)
    engine = _rds_engine(graph, instance)
    if engines is not None and engine is not None and engine not in engines:
        return (
            f"{metric} is published only for {' and '.join(sorted(engines))} instances, and {instance.name} runs "
            f"{engine}",
            f"alarm on a metric {engine} publishes (the RDS metrics page lists which apply to which engine)",
        )
    return None


def _rds_engine(graph: Graph, instance: RenderedResource) -> str | None:
    """The instance's engine, a read replica's from its source (up to a few hops)."""
    for _ in range(4):
        engine = instance.inputs.get("engine")
        if isinstance(engine, str) and engine:
            return engine
        source = graph.by_identifying_output.get(str(instance.inputs.get("replicateSourceDb")))
        if source is None or source.type != RDS_INSTANCE:
            return None
        instance = source
    return None


def _elb_dimension(namespace: str, dimensions: dict[str, Any]) -> tuple[str, str] | None:
    """A LoadBalancer or TargetGroup dimension that is not the final portion of its ARN, of the namespace's kind."""
    kind = ELB_KINDS.get(namespace)
    if kind is None:
        return None
    for key, form in ((ELB_DIMENSION, f"{kind}/NAME/ID"), (TARGET_GROUP_DIMENSION, "targetgroup/NAME/ID")):
        value = dimensions.get(key)
        if not isinstance(value, str) or not value:
            continue
        prefix = kind if key == ELB_DIMENSION else "targetgroup"
        if re.fullmatch(rf"{prefix}/[^/]+/[0-9a-f]+", value):
            continue
        if value.startswith("arn:"):
            what = "an ARN"
        elif key == ELB_DIMENSION and re.fullmatch(r"(app|net)/[^/]+/[0-9a-f]+", value):
            other = {"app": "an Application", "net": "a Network"}[value[:3]]
            what = f"{other} Load Balancer's, which {namespace} does not publish"
        else:
            what = "not of that form (a name?)"
        return (
            f"its {key} is {value!r}, {what}; {namespace} publishes under the final portion of the ARN, {form}",
            f"set {key} to the {'load balancer' if key == ELB_DIMENSION else 'target group'}'s arn_suffix output"
            + (
                " and the namespace to its kind's (AWS/ApplicationELB: app/, AWS/NetworkELB: net/)"
                if "Load" in what
                else ""
            ),
        )
    return None


def _container_insights(graph: Graph, namespace: str) -> tuple[str, str] | None:
    """A ContainerInsights metric where the program installs nothing that publishes Container Insights."""
    if namespace != CONTAINER_INSIGHTS or _installs_container_insights(graph):
        return None
    return (
        f"{CONTAINER_INSIGHTS} metrics are published only by Container Insights (the CloudWatch agent on EKS, the "
        "containerInsights cluster setting on ECS), and the program installs neither",
        "install Container Insights (aws.eks.Addon amazon-cloudwatch-observability, with its IAM role), or alarm on "
        "a metric that exists (AWS/EC2 CPUUtilization of the node group's Auto Scaling group, or a Prometheus rule)",
    )


def _installs_container_insights(graph: Graph) -> bool:
    for addon in graph.of_type(ADDON):
        if addon.inputs.get("addonName") == CLOUDWATCH_ADDON:
            return True
    for release in graph.of_type(HELM_RELEASE):
        if any(c in str(release.inputs.get("chart", "")) for c in CLOUDWATCH_CHARTS):
            return True
    for bearer in graph.pod_bearers():
        spec = bearer.pod_template().get("spec") or {}
        images = [c.get("image", "") for c in spec.get("containers") or [] if isinstance(c, dict)]
        if any(CLOUDWATCH_AGENT in str(i) for i in images):
            return True
    for cluster in graph.of_type(ECS_CLUSTER):
        for setting in cluster.inputs.get("settings") or []:
            named = isinstance(setting, dict) and setting.get("name") == "containerInsights"
            if named and setting.get("value") != "disabled":
                return True
    return any(s.inputs.get("name") == "containerInsights" for s in graph.of_type(ECS_ACCOUNT_SETTING))


def _shown(dimensions: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(dimensions.items())) or "no dimensions"
