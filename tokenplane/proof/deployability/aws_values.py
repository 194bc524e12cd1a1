"""Values an AWS API refuses that no schema sees: combinations and ranges each service validates at create time.

The provider's schema types every field, but the services check how fields go together. Each refusal below fails
``pulumi up`` at that resource (and whatever waits for it), with the service's own error:

- **MSK** ``CreateCluster``: the broker count is a multiple of the client subnets (one AZ each: "The number of
  broker nodes must be a multiple of Availability Zones in the Client Subnets parameter"); EBS volumes of 1 to
  16,384 GiB; broker types of the ``kafka.`` or ``express.`` families
  (https://docs.aws.amazon.com/msk/latest/developerguide/bestpractices.html,
  https://docs.aws.amazon.com/msk/1.0/apireference/clusters.html).
- **ElastiCache** ``CreateReplicationGroup``: automatic failover needs a replica, Multi-AZ needs automatic
  failover, an AUTH token needs in-transit encryption (InvalidParameterCombination / InvalidParameterValue:
  "The AUTH token is only supported when encryption-in-transit is enabled"), ``PreferredCacheClusterAZs`` names
  one AZ per cache cluster, node types are ``cache.*``, an AUTH token of 16 to 128 characters whose only
  non-alphanumerics are ``!&#$^<>-`` (judged on a secret's value too, e.g. a RandomPassword's result)
  (https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateReplicationGroup.html).
- **EKS** ``CreateNodegroup``: ``minSize <= desiredSize <= maxSize`` and ``maxSize >= 1``; ``diskSize`` and
  ``remoteAccess`` only without a launch template ("Disk size must be specified within the launch template");
  with one, no setting in both places (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html):
  ``instanceTypes`` beside the template's ``instanceType`` ("Cannot specify instance types in launch template and
  API request"), an ``amiType`` other than CUSTOM beside its ``imageId``, and none of what the template may not set
  (an IAM instance profile, a network interface's subnet, shutdown or hibernate behaviour, security groups both on
  the instance and on an interface);
  an AMI type of the instance types' architecture (Graviton types, a ``g`` among the attributes after the
  generation digit, run ``ARM_64`` AMIs only); no Amazon Linux 2 AMI from Kubernetes 1.33 on (EKS publishes
  none: https://docs.aws.amazon.com/eks/latest/userguide/eks-ami-deprecation-faqs.html); ``maxUnavailable`` and
  ``maxUnavailablePercentage`` not both, each within 1-100
  (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html).
- **S3** ``PutBucketLifecycleConfiguration``: a transition to ``STANDARD_IA`` or ``ONEZONE_IA`` at 30 days or
  more, an expiration after every transition ("'Days' in the Expiration action for filter '...' must be greater
  than 'Days' in the Transition action")
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html); each
  number of a rule's actions in its documented range (``LIFECYCLE_RANGES``): ``NewerNoncurrentVersions`` of a
  noncurrent version expiration or transition retains 1 to 100 versions ("You can specify up to 100 noncurrent
  versions to retain": https://docs.aws.amazon.com/AmazonS3/latest/API/API_NoncurrentVersionExpiration.html,
  API_NoncurrentVersionTransition.html; the provider's own floor is 1, ``IntAtLeast(1)``). S3 refuses the whole
  configuration (InvalidArgument; the exact text is not confirmed), so none of its rules apply.
- **Route 53** ``ChangeResourceRecordSets``: an alias record has no TTL and a plain one has one; a routing policy
  has a set identifier; a CNAME has one value and never sits at the zone apex ("RRSet of type CNAME with DNS
  name ... is not permitted at apex").
- **SQS** ``CreateQueue``: each attribute in its range (``VisibilityTimeout`` 0-43,200 s, ``MessageRetentionPeriod``
  60-1,209,600 s, ``DelaySeconds`` 0-900 s, ``ReceiveMessageWaitTimeSeconds`` 0-20 s, ``MaximumMessageSize``
  1,024-1,048,576 bytes, ``KmsDataKeyReusePeriodSeconds`` 60-86,400 s: InvalidAttributeValue;
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html); a ``RedrivePolicy``
  (on the queue or an ``aws.sqs.RedrivePolicy``) with a ``deadLetterTargetArn`` and a ``maxReceiveCount`` of 1-1,000,
  naming a dead-letter queue of the source's own type (FIFO to FIFO, standard to standard).
- **EC2** ``CreateSecurityGroup``: a VPC group's description (and name) only of ``a-zA-Z0-9``, spaces and
  ``._-:/()#,@[]+=&;{}!$*``, at most 255 characters (InvalidParameterValue;
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html).
- **KMS** ``CreateKey``: a key policy that lets some AWS principal put the key policy again (the lockout safety
  check; a deletion window of 7-30 days); a key usage of the key spec, and ``EnableKeyRotation`` only on a symmetric
  key of KMS's own store, with a period of 90-2,560 days (``kms_keys``).
- **CloudWatch** ``PutMetricAlarm``: a period of 10, 20 or 30 seconds or a multiple of 60 ("Valid values are 10,
  20, 30, and any multiple of 60": ValidationError;
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html); and an evaluation range
  (``Period`` x ``EvaluationPeriods``) of at most seven days (604,800 s), at most one day (86,400 s) for a period
  under an hour ("For alarms with a period of less than one hour (3,600 seconds), the total evaluation period can't
  be longer than one day": the same page, and botocore's cloudwatch service-2.json, ``PutMetricAlarmInput.Period``).
  Its fields go together: an "M out of N" alarm breaches on ``DatapointsToAlarm`` (M) of ``EvaluationPeriods`` (N)
  datapoints, so M <= N (ValidationError "DatapointsToAlarm must be less than or equal to EvaluationPeriods":
  hashicorp/terraform#24070); a metric math alarm (``Metrics``, the provider's ``metricQueries``) takes none of
  ``MetricName``, ``Namespace``, ``Dimensions``, ``Period``, ``Unit``, ``Statistic`` or ``ExtendedStatistic``
  ("If you use the Metrics parameter, you cannot include ...": PutMetricAlarm's ``Metrics``; the provider's schema
  has ``metric_name`` and ``dimensions`` ``ConflictsWith: []string{"metric_query"}``) and watches one query,
  the one with ``ReturnData`` true ("One item in the Metrics array is the expression that the alarm watches"),
  through queries whose ids start with a lowercase letter and hold only letters, digits and underscores, unique in
  the alarm (``MetricDataQuery.Id``: "The first character must be a lowercase letter").
- **ECR** ``PutLifecyclePolicy``: unique rule priorities, the ``tagStatus: any`` rule last, a rule selecting
  ``tagged`` images names a ``tagPrefixList`` or a ``tagPatternList`` (not both; an ``untagged`` one neither), at
  most four wildcards per pattern, a ``countUnit`` with ``sinceImagePushed`` and none with ``imageCountMoreThan``
  (InvalidParameterException; ``ecr_lifecycle``,
  https://docs.aws.amazon.com/AmazonECR/latest/userguide/lifecycle_policy_parameters.html).
- **EKS** add-ons: ``resolveConflictsOnCreate`` NONE or OVERWRITE, ``resolveConflictsOnUpdate`` NONE, OVERWRITE or
  PRESERVE (the provider's own validation at preview: ``eks_addon_values``).
- **Route 53 Resolver** ``CreateResolverEndpoint``: at least two IP addresses (``resolver_values``).
- **KMS** ``CreateAlias``: an alias name of ``alias/`` and then ``a-zA-Z0-9/_-``, at most 256 characters, never
  under ``alias/aws/``, the prefix reserved for AWS managed keys ("The alias name cannot begin with alias/aws/":
  https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateAlias.html; the provider's own name check refuses it
  at preview too: hashicorp/terraform-provider-aws internal/service/kms/validate.go, ``validNameForResource``).
- **Secrets Manager** ``DeleteSecret``: a recovery window of 0 (``ForceDeleteWithoutRecovery``, deleted at once) or
  7 to 30 days (``RecoveryWindowInDays``: "Minimum value of 7. Maximum value of 30",
  https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_DeleteSecret.html). The provider validates
  ``recovery_window_in_days`` against exactly that at preview (hashicorp/terraform-provider-aws
  ``aws_secretsmanager_secret``: ``validation.Any(IntBetween(7, 30), IntInSlice([]int{0}))``), so ``pulumi up`` stops
  before creating anything; CloudFormation's ``AWS::SecretsManager::Secret`` has no such property, so cfn-lint's
  schema cannot see it.
- **KMS** ``ScheduleKeyDeletion``: a deletion window of 7 to 30 days. **CloudWatch Logs** ``PutRetentionPolicy``:
  one of its enumerated retention periods; ``CreateLogGroup``: no name starting with ``aws/`` ("Log group names
  can't start with the string aws/": InvalidParameterException;
  https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html). **EC2** security
  group rules: each rule's protocol, ports and source as EC2 and the provider take them together (``security_group_fields``: ports beside protocol ``-1``, TCP/UDP ports
  within 0-65535 and in order, ICMP types and codes, one source per ``aws.vpc`` rule).

- **EventBridge** ``PutRule`` (and Pipes, Lambda event filters): every leaf of an event pattern is an array
  (``event_patterns``).
- **Elastic Load Balancing** ``CreateTargetGroup``: an Application Load Balancer target group's (protocol HTTP or
  HTTPS, or a Lambda target) health check interval greater than its timeout ("ValidationError: Health check interval
  must be greater than the timeout";
  https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-health-checks.html; defaults
  interval 30 and timeout 5, 35 and 30 for a Lambda target; hashicorp/terraform-provider-aws#48071). Network Load
  Balancer target groups (TCP, TLS, UDP) are not judged.
- **EC2** ``CreateSecurityGroup`` without ``vpcId`` (the default VPC) for a resource placed in the program's VPC:
  RDS, ElastiCache, Lambda, EKS, ELB, EFS, MSK and interface endpoints refuse a group of another VPC
  (``security_group_vpc``).
- **Lambda** ``CreateFunction``: environment variable keys of ``[a-zA-Z]([a-zA-Z0-9_])+``, none reserved, 4 KB in
  all (``lambda_environment``).
- **Route 53** ``CreateHealthCheck``: a request interval of 10 or 30 seconds and a failure threshold of 1 to 10; the
  provider validates both at preview (hashicorp/terraform-provider-aws ``aws_route53_health_check``:
  ``request_interval`` ``IntInSlice([]int{10, 30})``, ``failure_threshold`` ``IntBetween(1, 10)``;
  https://docs.aws.amazon.com/Route53/latest/APIReference/API_HealthCheckConfig.html).
- **Lambda** ``CreateEventSourceMapping``: a batch size within its source's limit (SQS standard 1-10,000, FIFO 1-10,
  Kinesis, DynamoDB streams, MSK, Kafka and MQ 1-10,000), and an SQS batch above 10 only with a batching window of at
  least a second (InvalidParameterValueException "Maximum batch window in seconds must be greater than 0 if maximum
  batch size is greater than 10"); the window itself 0-300 s
  (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html, BatchSize;
  https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).
- **EventBridge** ``PutTargets``, Scheduler and Pipes: each target's parameters of its kind (``event_targets``: a FIFO
  queue's message group and content-based deduplication, an ECS task's parameters and role, a Batch job's).
- **CloudWatch** ``PutMetricAlarm`` and ``PutCompositeAlarm``: SNS actions are topics in the alarm's own region
  (``alarm_actions``).
- **Systems Manager** ``PutParameter``: a value within its tier's size (Standard 4 KB, Advanced and
  Intelligent-Tiering 8 KB), a name of ``a-zA-Z0-9_.-/``, at most 15 levels and 1,011 characters with its ARN
  (``ssm_parameters``).
- **DynamoDB** ``CreateTable``: index projections (INCLUDE with ``NonKeyAttributes``, KEYS_ONLY and ALL without, at
  most 100 across the indexes), every key attribute defined and every defined attribute a key, at most 5 local
  secondary indexes (``dynamodb_indexes``).
- **Lambda** ``CreateEventSourceMapping``: an SQS mapping's ``ScalingConfig.MaximumConcurrency`` of 2 to 1,000
  (https://docs.aws.amazon.com/lambda/latest/api/API_ScalingConfig.html).
- **Data Firehose** ``CreateDeliveryStream``: an extended S3 destination's buffers of 1-128 MiB and 0-900 s, at least
  64 MiB and 60 s with dynamic partitioning (the provider's default size is 5 MiB), and prefixes whose expressions
  Firehose takes (an error prefix beside an expression prefix, with ``!{firehose:error-output-type}``; partition
  keys only with dynamic partitioning, defined by its processors) (``firehose_streams``,
  https://docs.aws.amazon.com/firehose/latest/dev/s3-prefixes.html).

- **EFS** ``CreateFileSystem`` and ``CreateMountTarget``: provisioned throughput with a rate of at least 1 MiB/s, a
  KMS key only on an encrypted file system, no ``maxIO`` on a One Zone file system, a One Zone file system's mount
  target in its own zone, a file system's mount targets in one VPC (``efs_values``).
- **Cognito** ``CreateUserPoolDomain``: a prefix domain without the reserved words ``aws``, ``amazon`` and
  ``cognito``, of 1-63 lowercase letters, digits and inner hyphens (``cognito_values``).
- **EC2** ``CreateFlowLogs``: a ``maxAggregationInterval`` of 60 or 600 seconds (the provider's ``IntInSlice``), and
  a ``logDestination`` that is the ARN of what ``logDestinationType`` names (a log group, an S3 bucket, a Firehose
  stream), not a bucket's or a group's name (``flow_logs``,
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateFlowLogs.html).
- **Data Lifecycle Manager** ``CreateLifecyclePolicy``: a schedule's interval of 1, 2, 3, 4, 6, 8, 12 or 24 hours,
  and a cron expression or an interval, never both (``dlm_policies``,
  https://docs.aws.amazon.com/dlm/latest/APIReference/API_CreateRule.html).

- **Kinesis** ``CreateStream`` and ``IncreaseStreamRetentionPeriod``/``DecreaseStreamRetentionPeriod``: a retention
  period of 24 to 8,760 hours (https://docs.aws.amazon.com/streams/latest/dev/kinesis-extended-retention.html; the
  provider refuses it at preview: hashicorp/terraform-provider-aws internal/service/kinesis/stream.go,
  ``retention_period`` ``validation.IntBetween(24, 8760)``; cfn-lint's schema for ``AWS::Kinesis::Stream`` has a
  minimum of 1, so ``cfn_types`` does not see it).
- **Kinesis** stream capacity mode and shard count: an ON_DEMAND stream scales itself and takes no shard count, a
  PROVISIONED one (the mode when ``streamModeDetails`` is left out) needs one of at least 1 (CreateStream's
  ShardCount, https://docs.aws.amazon.com/kinesis/latest/APIReference/API_CreateStream.html; "Choosing the data
  stream capacity mode", https://docs.aws.amazon.com/streams/latest/dev/how-do-i-size-a-stream.html). The provider
  refuses both at preview in its CustomizeDiff ("shard_count must not be set when stream_mode is ON_DEMAND", "shard_count
  must be at least 1 when stream_mode is PROVISIONED": hashicorp/terraform-provider-aws
  internal/service/kinesis/stream.go). Judged where the mode and the count are known at render time.
- **S3** ``PutBucketAccelerateConfiguration`` (an ``aws.s3.BucketAccelerateConfiguration`` or a bucket's own
  ``accelerationStatus``) Enabled on a bucket whose name holds a period: "S3 Transfer Acceleration is not supported for
  buckets with periods (.) in their names" (InvalidRequest; S3 User Guide, "Configuring fast, secure file transfers
  using Amazon S3 Transfer Acceleration", requirements: the bucket name must be DNS-compliant and must not contain
  periods). Judged on names written in the program; an autonamed bucket's is not.

- **ElastiCache** ``CreateServerlessCache``, ``CreateReplicationGroup``, ``CreateCacheCluster``: a
  ``SnapshotRetentionLimit`` of at most 35 days (CreateServerlessCache's SnapshotRetentionLimit; the provider's
  ``snapshot_retention_limit`` ``validation.IntAtMost(35)`` on ``aws_elasticache_cluster`` and
  ``aws_elasticache_replication_group``), and a serverless cache's usage limits (``service_limits``).
- **S3** ``PutBucketLifecycleConfiguration``: ``AbortIncompleteMultipartUpload`` and ``ExpiredObjectDeleteMarker``
  only in a rule whose filter has no tags and no object size ("InvalidRequest: AbortIncompleteMultipartUpload cannot
  be specified with Tags.", and the same of ExpiredObjectDeleteMarker and of Object Size: an upload in progress and
  a delete marker have neither; https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html,
  terraform-aws-modules/terraform-aws-s3-bucket#109). The whole configuration is refused.
- **Budgets** ``CreateBudget``: forecasted alerts only on monthly, quarterly and annual budgets; **Secrets Manager**
  ``CreateSecret``: replicas in other Regions than the secret's, one each (``service_limits``).
- **Cost and Usage Report** ``PutReportDefinition``: through a us-east-1 provider only, with the artifact, format
  and versioning combinations the provider accepts (``cur_reports``). **CloudWatch Logs** ``PutMetricFilter``:
  dimensions only on JSON or space-delimited patterns. **Athena**: an enforced workgroup configuration names a
  query result location (``athena_workgroups``; deploys, then every query fails).

A value unknown at render time (an output, a secret) is not judged.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from tokenplane.proof.deployability import (
    alarm_actions,
    athena_workgroups,
    cognito_values,
    cur_reports,
    dead_letters,
    dlm_policies,
    dynamodb_indexes,
    ecr_lifecycle,
    efs_values,
    eks_addon_values,
    event_patterns,
    event_targets,
    firehose_streams,
    flow_logs,
    iam_policy,
    kms_keys,
    lambda_environment,
    resolver_values,
    security_group_fields,
    security_group_vpc,
    service_limits,
    ssm_parameters,
)
from tokenplane.proof.deployability.aws_replay import cloud_region_of
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup, number
from tokenplane.proof.deployability.launch_keys import launch_template
from tokenplane.proof.deployability.record_names import zone_of
from tokenplane.proof.render import RenderedResource

RULE = "aws-api-values"

MSK_CLUSTER = "aws:msk/cluster:Cluster"
REPLICATION_GROUP = "aws:elasticache/replicationGroup:ReplicationGroup"
# CreateReplicationGroup's AuthToken: "Must be only printable ASCII characters. Must be at least 16 characters and no
# more than 128 characters in length. The only permitted printable special characters are !, &, #, $, ^, <, >, and -"
# (https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateReplicationGroup.html; the same in
# https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/auth.html).
AUTH_TOKEN_LENGTH = (16, 128)
AUTH_TOKEN_SPECIAL = "!&#$^<>-"
REDACTED = "[secret]"  # what the render leaves of a secret value
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
CLUSTER = "aws:eks/cluster:Cluster"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
LIFECYCLE_V2 = "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2"
RECORD = "aws:route53/record:Record"
ZONE = "aws:route53/zone:Zone"
KMS_KEY = "aws:kms/key:Key"
KMS_ALIAS = "aws:kms/alias:Alias"
KMS_ALIAS_NAME = re.compile(r"^alias/[a-zA-Z0-9/_-]+$")
KMS_ALIAS_MAX = 256
KMS_RESERVED_ALIAS = "alias/aws/"  # AWS managed keys' aliases (alias/aws/s3, alias/aws/ebs...)
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
LOG_GROUP_RESERVED = "aws/"  # CreateLogGroup refuses names starting with it
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"

SQS_QUEUE = "aws:sqs/queue:Queue"
SQS_REDRIVE = "aws:sqs/redrivePolicy:RedrivePolicy"
# RedrivePolicy's maxReceiveCount: "valid values are from 1 to 1000 both inclusive" (SetQueueAttributes' error text;
# https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html, RedrivePolicy).
MAX_RECEIVE_COUNT = (1, 1_000)
METRIC_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
ECR_LIFECYCLE = "aws:ecr/lifecyclePolicy:LifecyclePolicy"
METRIC_FILTER = "aws:cloudwatch/logMetricFilter:LogMetricFilter"
TOPIC = "aws:sns/topic:Topic"
SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
# WAFv2 resources whose scope CLOUDFRONT exists only in us-east-1 (the WAF API's Scope parameter).
WAF_SCOPED = (
    "aws:wafv2/webAcl:WebAcl",
    "aws:wafv2/ipSet:IpSet",
    "aws:wafv2/regexPatternSet:RegexPatternSet",
    "aws:wafv2/ruleGroup:RuleGroup",
)
MAX_FILTER_DIMENSIONS = 3
SHORT_ALARM_PERIODS = {10, 20, 30}  # high-resolution periods; any other is a multiple of 60
# PutMetricAlarm's longest evaluation range (Period x EvaluationPeriods), and the shorter one for sub-hour periods.
ALARM_RANGE_S = 604_800
SHORT_PERIOD_RANGE_S = 86_400
HOUR_S = 3_600
# The single-metric fields PutMetricAlarm refuses beside Metrics (the provider's metricQueries).
# MetricDataQuery.Id: "The first character must be a lowercase letter"; letters, numbers and underscores only, at
# most 255 characters (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataQuery.html).
METRIC_QUERY_ID = re.compile(r"^[a-z][a-zA-Z0-9_]{0,254}$")
SINGLE_METRIC_FIELDS = ("metricName", "namespace", "dimensions", "period", "statistic", "extendedStatistic", "unit")
SECRET = "aws:secretsmanager/secret:Secret"
HEALTH_CHECK = "aws:route53/healthCheck:HealthCheck"
MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping"
TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"
ALB_PROTOCOLS = ("HTTP", "HTTPS")
# An ALB target group's health check defaults (interval, timeout), by whether its targets are a Lambda function.
ALB_HEALTH_DEFAULTS = {False: (30.0, 5.0), True: (35.0, 30.0)}
# CreateEventSourceMapping's largest BatchSize by the source's ARN service (MQ and self-managed Kafka take no ARN of
# these; MSK is "kafka"). A standard queue's 10,000 needs a batching window above 10; a FIFO queue takes 10.
BATCH_LIMITS = {"sqs": 10_000, "kinesis": 10_000, "dynamodb": 10_000, "kafka": 10_000, "mq": 10_000}
SQS_UNWINDOWED_BATCH = 10
FIFO_BATCH = 10
MAXIMUM_CONCURRENCY = (2, 1_000)  # an SQS mapping's ScalingConfig.MaximumConcurrency
KINESIS_STREAM = "aws:kinesis/stream:Stream"
S3_BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
ELASTICACHE_CLUSTER = "aws:elasticache/cluster:Cluster"
SERVERLESS_CACHE = "aws:elasticache/serverlessCache:ServerlessCache"

S3_ACCELERATE = (
    "aws:s3/bucketAccelerateConfiguration:BucketAccelerateConfiguration",
    "aws:s3/bucketAccelerateConfigurationV2:BucketAccelerateConfigurationV2",
)


class Range(NamedTuple):
    """An input's inclusive range as its API names it, and the values outside the range it also takes."""

    api: str
    low: int
    high: int
    unit: str
    also: frozenset[int] = frozenset()


# ElastiCache keeps automatic snapshots for at most 35 days (SnapshotRetentionLimit; 0 turns them off).
SNAPSHOT_RETENTION = Range("SnapshotRetentionLimit", 0, 35, "days")
# A resource type's numeric inputs and the ranges its API takes.
RANGES: dict[str, dict[str, Range]] = {
    SQS_QUEUE: {
        "visibilityTimeoutSeconds": Range("VisibilityTimeout", 0, 43_200, "s"),
        "messageRetentionSeconds": Range("MessageRetentionPeriod", 60, 1_209_600, "s"),
        "delaySeconds": Range("DelaySeconds", 0, 900, "s"),
        "receiveWaitTimeSeconds": Range("ReceiveMessageWaitTimeSeconds", 0, 20, "s"),
        "maxMessageSize": Range("MaximumMessageSize", 1_024, 1_048_576, "bytes"),
        "kmsDataKeyReusePeriodSeconds": Range("KmsDataKeyReusePeriodSeconds", 60, 86_400, "s"),
    },
    # 0 deletes the secret at once (ForceDeleteWithoutRecovery); otherwise DeleteSecret's RecoveryWindowInDays.
    SECRET: {"recoveryWindowInDays": Range("RecoveryWindowInDays", 7, 30, "days", frozenset({0}))},
    # Route 53's standard (30 s) and fast (10 s) checkers; nothing between.
    HEALTH_CHECK: {
        "requestInterval": Range("RequestInterval", 30, 30, "s", frozenset({10})),
        "failureThreshold": Range("FailureThreshold", 1, 10, "checks"),
    },
    MAPPING: {"maximumBatchingWindowInSeconds": Range("MaximumBatchingWindowInSeconds", 0, 300, "s")},
    KINESIS_STREAM: {"retentionPeriod": Range("RetentionPeriodHours", 24, 8_760, "hours")},
    SERVERLESS_CACHE: {"snapshotRetentionLimit": SNAPSHOT_RETENTION},
    REPLICATION_GROUP: {"snapshotRetentionLimit": SNAPSHOT_RETENTION},
    ELASTICACHE_CLUSTER: {"snapshotRetentionLimit": SNAPSHOT_RETENTION},
}
SERVICE_NAMES = {
    SQS_QUEUE: "SQS",
    SECRET: "Secrets Manager",
    HEALTH_CHECK: "Route 53",
    MAPPING: "Lambda",
    KINESIS_STREAM: "Kinesis",
    SERVERLESS_CACHE: "ElastiCache",
    REPLICATION_GROUP: "ElastiCache",
    ELASTICACHE_CLUSTER: "ElastiCache",
}
# The error each service answers an out-of-range value with.
RANGE_ERRORS = {
    SQS_QUEUE: "InvalidAttributeValue",
    SECRET: "the provider refuses it at preview, as DeleteSecret would",
    HEALTH_CHECK: "the provider refuses it at preview, as CreateHealthCheck would",
    MAPPING: "InvalidParameterValueException",
    KINESIS_STREAM: "the provider refuses it at preview, and Kinesis's retention calls take",
    SERVERLESS_CACHE: "InvalidParameterValueException: CreateServerlessCache keeps snapshots",
    REPLICATION_GROUP: "the provider refuses it at preview, as CreateReplicationGroup would: it keeps snapshots",
    ELASTICACHE_CLUSTER: "the provider refuses it at preview, as CreateCacheCluster would: it keeps snapshots",
}
# What EC2 takes in a VPC security group's name and description (CreateSecurityGroup).
SECURITY_GROUP_TEXT = re.compile(r"^[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{0,255}$")
MSK_VOLUME_GIB = range(1, 16_385)
# The numbers inside a lifecycle rule's actions and their documented ranges: (action, field) -> range.
LIFECYCLE_RANGES: dict[tuple[str, str], Range] = {
    ("noncurrentVersionExpiration", "newerNoncurrentVersions"): Range("NewerNoncurrentVersions", 1, 100, "versions"),
    ("noncurrentVersionTransitions", "newerNoncurrentVersions"): Range("NewerNoncurrentVersions", 1, 100, "versions"),
}
INFREQUENT_ACCESS = {"STANDARD_IA": 30, "ONEZONE_IA": 30}  # storage class -> fewest days before the transition
LOG_RETENTION_DAYS = {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288}
LOG_RETENTION_DAYS |= {3653}
KMS_WINDOW_DAYS = range(7, 31)
AL2_LAST_KUBERNETES = (1, 32)
ROUTING_POLICIES = (
    "latencyRoutingPolicies",
    "weightedRoutingPolicies",
    "geolocationRoutingPolicies",
    "failoverRoutingPolicies",
    "geoproximityRoutingPolicy",
    "cidrRoutingPolicy",
)
# An EC2 instance type's family: series letters, generation digit(s), attribute letters (m7gd: m, 7, gd).
_FAMILY = re.compile(r"^([a-z]+?)(\d+)([a-z-]*)\.")


def _rejected(resource: RenderedResource, service: str, what: str, fix: str) -> Finding:
    return Finding(RULE, resource.urn, f"{service} refuses {resource.name}: {what}", fix)


def check(graph: Graph) -> Iterator[Finding]:
    yield from event_patterns.check(graph)
    yield from alarm_actions.check(graph)
    yield from event_targets.check(graph)
    yield from ssm_parameters.check(graph, RULE)
    yield from dlm_policies.check_values(graph, RULE)
    yield from dynamodb_indexes.check(graph, RULE)
    yield from kms_keys.check(graph, RULE)
    yield from efs_values.check(graph, RULE)
    yield from cognito_values.check(graph, RULE)
    yield from firehose_streams.check(graph, RULE)
    yield from flow_logs.check(graph, RULE)
    yield from eks_addon_values.check(graph, RULE)
    yield from lambda_environment.check(graph, RULE)
    yield from security_group_vpc.check(graph, RULE)
    yield from resolver_values.check(graph, RULE)
    yield from service_limits.check(graph, RULE)
    yield from cur_reports.check(graph, RULE)
    yield from athena_workgroups.check(graph, RULE)
    for target_group in graph.of_type(TARGET_GROUP):
        yield from _health_timing(target_group)
    yield from _dotted_acceleration(graph)
    for stream in graph.of_type(KINESIS_STREAM):
        yield from _stream_capacity(stream)
    for mapping in graph.of_type(MAPPING):
        yield from _batch_size(graph, mapping)
        yield from _maximum_concurrency(mapping)
    for msk in graph.of_type(MSK_CLUSTER):
        yield from _msk(msk)
    for group in graph.of_type(REPLICATION_GROUP):
        yield from _replication_group(group)
    for node_group in graph.of_type(NODE_GROUP):
        yield from _node_group(graph, node_group)
    for lifecycle in graph.of_type(LIFECYCLE) + graph.of_type(LIFECYCLE_V2):
        yield from _lifecycle(lifecycle)
    for record in graph.of_type(RECORD):
        yield from _record(graph, record)
    for subscription in graph.of_type(SUBSCRIPTION):
        yield from _fifo_subscription(graph, subscription)
    for queue in graph.of_type(SQS_QUEUE) + graph.of_type(SQS_REDRIVE):
        yield from _redrive(graph, queue)
    for resource in graph.resources:
        yield from _ranges(resource)
        if resource.type == METRIC_ALARM:
            yield from _alarm_periods(resource)
        elif resource.type == ECR_LIFECYCLE:
            yield from ecr_lifecycle.check(resource)
        elif resource.type == METRIC_FILTER:
            yield from _metric_filter(resource)
        elif resource.type in WAF_SCOPED:
            yield from _waf_scope(graph, resource)
        if resource.type == KMS_KEY:
            yield from _key_policy_lockout(resource)
            window = number(resource.inputs.get("deletionWindowInDays"))
            if window is not None and int(window) not in KMS_WINDOW_DAYS:
                yield _rejected(
                    resource, "KMS", f"a deletion window of {window:g} days (7-30 allowed)", "set 7 to 30 days"
                )
        elif resource.type == KMS_ALIAS:
            yield from _kms_alias(resource)
        elif resource.type == LOG_GROUP:
            yield from _log_group_name(resource)
            days = number(resource.inputs.get("retentionInDays"))
            if days is not None and days != 0 and int(days) not in LOG_RETENTION_DAYS:
                allowed = ", ".join(str(d) for d in sorted(LOG_RETENTION_DAYS))
                yield _rejected(
                    resource,
                    "CloudWatch Logs",
                    f"a retention of {days:g} days (InvalidParameterException: one of {allowed})",
                    "choose one of the enumerated retention periods",
                )
        elif resource.type == SECURITY_GROUP:
            yield from _security_group_text(resource)
    yield from security_group_fields.check(graph.resources)


def _log_group_name(group: RenderedResource) -> Iterator[Finding]:
    """CreateLogGroup: "Log group names can't start with the string aws/" (reserved for AWS services; a leading
    slash, /aws/lambda/..., is a different name and allowed)."""
    for key in ("name", "namePrefix"):
        value = group.inputs.get(key)
        if isinstance(value, str) and value.startswith(LOG_GROUP_RESERVED):
            yield _rejected(
                group,
                "CloudWatch Logs",
                f"its {key} {value!r} starts with {LOG_GROUP_RESERVED} (InvalidParameterException: log group names "
                f"can't start with the string {LOG_GROUP_RESERVED}, which AWS reserves for its services)",
                f"name it without the {LOG_GROUP_RESERVED} prefix (e.g. /{value} with a leading slash, or a "
                "/<team>/<purpose> path of your own)",
            )


def _batch_size(graph: Graph, mapping: RenderedResource) -> Iterator[Finding]:
    """BatchSize within the source's limit; an SQS batch above 10 with a batching window of a second or more."""
    batch, source = number(mapping.inputs.get("batchSize")), mapping.inputs.get("eventSourceArn")
    parts = source.split(":") if isinstance(source, str) else []
    if batch is None or len(parts) < 6 or parts[0] != "arn" or parts[2] not in BATCH_LIMITS:
        return  # no batch size (the source's default), or a source unknown at render time
    service, limit = parts[2], BATCH_LIMITS[parts[2]]
    queues = [q for q in graph.by_physical_ids(source) if q.type == SQS_QUEUE]
    fifo = service == "sqs" and (parts[-1].endswith(".fifo") or any(q.inputs.get("fifoQueue") for q in queues))
    limit = FIFO_BATCH if fifo else limit
    if not 1 <= batch <= limit:
        kind = "a FIFO queue" if fifo else f"a {service} source"
        yield _rejected(
            mapping,
            "Lambda",
            f"batchSize {batch:g} from {kind} (InvalidParameterValueException: BatchSize 1-{limit:,} for it)",
            f"set batch_size within 1-{limit:,}",
        )
    window = number(mapping.inputs.get("maximumBatchingWindowInSeconds"))
    if service == "sqs" and not fifo and batch > SQS_UNWINDOWED_BATCH and (window is None or window < 1):
        yield _rejected(
            mapping,
            "Lambda",
            f"batchSize {batch:g} from SQS queue {parts[-1]} with maximumBatchingWindowInSeconds "
            f"{'unset' if window is None else f'{window:g}'} (InvalidParameterValueException: Maximum batch window in "
            f"seconds must be greater than 0 if maximum batch size is greater than {SQS_UNWINDOWED_BATCH})",
            f"set maximum_batching_window_in_seconds to 1-300, or batch_size to {SQS_UNWINDOWED_BATCH} or fewer",
        )


def _dotted_acceleration(graph: Graph) -> Iterator[Finding]:
    """Transfer Acceleration Enabled on a bucket whose written-out name holds a period."""
    enabled: list[tuple[RenderedResource, Any]] = []  # (the resource that enables it, the bucket's name)
    for bucket in (b for typ in S3_BUCKETS for b in graph.of_type(typ)):
        if bucket.inputs.get("accelerationStatus") == "Enabled":
            enabled.append((bucket, bucket.inputs.get("bucket")))
    for config in (c for typ in S3_ACCELERATE for c in graph.of_type(typ)):
        if config.inputs.get("status") != "Enabled":
            continue
        urns = config.property_dependencies.get("bucket", [])
        buckets = [graph.by_urn[u] for u in urns if u in graph.by_urn and graph.by_urn[u].type in S3_BUCKETS]
        buckets = buckets or [b for b in graph.by_physical_ids(config.inputs.get("bucket")) if b.type in S3_BUCKETS]
        if len(buckets) == 1:
            enabled.append((config, buckets[0].inputs.get("bucket")))
        elif not buckets and not urns:
            enabled.append((config, config.inputs.get("bucket")))  # a bucket of another stack, by its name
    for resource, name in enabled:
        if isinstance(name, str) and "." in name:
            yield _rejected(
                resource,
                "S3",
                f"Transfer Acceleration (status Enabled) on bucket {name!r}, whose name holds a period "
                "(InvalidRequest: S3 Transfer Acceleration is not supported for buckets with periods (.) in their "
                "names); the bucket is created, the acceleration never is",
                "name the bucket without periods (hyphens instead: DNS-compliant), or drop Transfer Acceleration",
            )


def _health_timing(target_group: RenderedResource) -> Iterator[Finding]:
    lambda_target = target_group.inputs.get("targetType") == "lambda"
    protocol = target_group.inputs.get("protocol")
    if not lambda_target and protocol not in ALB_PROTOCOLS:
        return  # an NLB (or GWLB) target group, or unknown
    health = target_group.inputs.get("healthCheck") or {}
    if not isinstance(health, dict) or health.get("enabled") is False:
        return
    defaults = ALB_HEALTH_DEFAULTS[lambda_target]
    interval = number(health.get("interval")) if "interval" in health else defaults[0]
    timeout = number(health.get("timeout")) if "timeout" in health else defaults[1]
    if interval is None or timeout is None or interval > timeout:
        return
    yield _rejected(
        target_group,
        "Elastic Load Balancing",
        f"its health check interval {interval:g} s is not greater than its timeout {timeout:g} s "
        "(CreateTargetGroup: ValidationError, Health check interval must be greater than the timeout)",
        f"set health_check.interval above the timeout (e.g. {timeout + 10:g}) or a timeout below {interval:g}",
    )


def _maximum_concurrency(mapping: RenderedResource) -> Iterator[Finding]:
    """ScalingConfig.MaximumConcurrency: "Valid Range: Minimum value of 2. Maximum value of 1000"
    (https://docs.aws.amazon.com/lambda/latest/api/API_ScalingConfig.html; the CloudFormation schema's the same)."""
    value = number(lookup(mapping.inputs, "scalingConfig.maximumConcurrency"))
    low, high = MAXIMUM_CONCURRENCY
    if value is not None and not low <= value <= high:
        yield _rejected(
            mapping,
            "Lambda",
            f"scalingConfig.maximumConcurrency {value:g} (InvalidParameterValueException: {low}-{high:,})",
            f"set scaling_config.maximum_concurrency to {low}-{high:,} (at least two pollers always run)",
        )


def _redrive(graph: Graph, resource: RenderedResource) -> Iterator[Finding]:
    """A RedrivePolicy SQS takes: a JSON object with deadLetterTargetArn and a maxReceiveCount of 1-1,000, naming a
    dead-letter queue of the source's own type ("The dead-letter queue of a FIFO queue must also be a FIFO queue.
    Similarly, the dead-letter queue of a standard queue must also be a standard queue":
    https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html).
    CreateQueue (SetQueueAttributes for a RedrivePolicy resource) answers InvalidParameterValue "Value ... for
    parameter RedrivePolicy is invalid" for each."""
    raw = resource.inputs.get("redrivePolicy")
    try:
        policy = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        return  # a value the render does not show whole
    if not isinstance(policy, dict):
        return
    count = policy.get("maxReceiveCount")
    number = _count(count)
    low, high = MAX_RECEIVE_COUNT
    if "deadLetterTargetArn" not in policy or number is None or not low <= number <= high:
        what = (
            "no deadLetterTargetArn"
            if "deadLetterTargetArn" not in policy
            else f"maxReceiveCount {count!r} (Reason: Invalid value for maxReceiveCount: valid values are from "
            f"{low} to {high:,} both inclusive)"
        )
        yield _rejected(
            resource,
            "SQS",
            f"a redrive policy with {what}: InvalidParameterValue for parameter RedrivePolicy, so the queue's "
            "create (or SetQueueAttributes) fails",
            f"give the policy deadLetterTargetArn and a maxReceiveCount of {low} to {high:,} (the receives before a "
            "message moves to the dead-letter queue; for no retries use 1, or drop the redrive policy)",
        )
    if resource.type != SQS_QUEUE:
        return
    target = dead_letters.dead_letter_queue(graph, resource)
    if target is None:
        return
    source_fifo, target_fifo = _fifo_queue(resource), _fifo_queue(target)
    if source_fifo != target_fifo:
        kinds = ("FIFO", "standard") if source_fifo else ("standard", "FIFO")
        yield _rejected(
            resource,
            "SQS",
            f"a {kinds[0]} queue whose dead-letter queue {target.name} is a {kinds[1]} queue (InvalidParameterValue: "
            "a FIFO queue's dead-letter queue is a FIFO queue, a standard queue's a standard one)",
            f"make {target.name} a {kinds[0]} queue (fifo_queue={source_fifo}), or dead-letter to another",
        )


def _fifo_queue(queue: RenderedResource) -> bool:
    name = queue.inputs.get("name")
    return queue.inputs.get("fifoQueue") is True or (isinstance(name, str) and name.endswith(".fifo"))


def _fifo_subscription(graph: Graph, subscription: RenderedResource) -> Iterator[Finding]:
    """A FIFO topic delivers only to SQS queues: Subscribe answers InvalidParameter ("Invalid protocol type")
    for any other protocol (https://docs.aws.amazon.com/sns/latest/dg/fifo-message-delivery.html)."""
    topics = [graph.by_urn[u] for u in subscription.property_dependencies.get("topic", []) if u in graph.by_urn]
    fifo = [t for t in topics if t.type == TOPIC and t.inputs.get("fifoTopic")]
    protocol = subscription.inputs.get("protocol")
    if fifo and isinstance(protocol, str) and protocol != "sqs":
        yield _rejected(
            subscription,
            "SNS",
            f"a {protocol} subscription on FIFO topic {fifo[0].name} (InvalidParameter: Invalid protocol type: "
            f"{protocol}; a FIFO topic delivers only to SQS queues)",
            "subscribe an SQS queue (which the paging tool reads), or make the topic a standard one",
        )


def _waf_scope(graph: Graph, resource: RenderedResource) -> Iterator[Finding]:
    region = cloud_region_of(graph, resource.region)
    if resource.inputs.get("scope") == "CLOUDFRONT" and region != "us-east-1":
        yield _rejected(
            resource,
            "WAF",
            f"scope CLOUDFRONT in {region} (WAFInvalidParameterException: CloudFront-scoped resources are made in "
            "us-east-1 only, https://docs.aws.amazon.com/waf/latest/APIReference/API_CreateWebACL.html)",
            "create it with an AWS provider for us-east-1, or use scope REGIONAL for a regional load balancer",
        )


def _metric_filter(metric_filter: RenderedResource) -> Iterator[Finding]:
    """PutMetricFilter refuses a transformation with dimensions and a default value, and more than three
    dimensions (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_MetricTransformation.html:
    "If you specify dimensions, you can't specify a defaultValue"; "you can specify up to three dimensions"), and
    dimensions on a pattern that is neither JSON nor space-delimited (a term or regex pattern has no fields:
    the section "Publishing dimensions with metrics from values in JSON or space-delimited log events" of
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntaxForMetricFilters.html;
    InvalidParameterException "The specified filter pattern does not support dimensions",
    hashicorp/terraform-provider-aws#22105). An empty pattern is not judged."""
    transformation = metric_filter.inputs.get("metricTransformation")
    transformation = transformation[0] if isinstance(transformation, list) and transformation else transformation
    if not isinstance(transformation, dict):
        return
    dimensions = transformation.get("dimensions") or {}
    if dimensions and transformation.get("defaultValue") not in (None, ""):
        yield _rejected(
            metric_filter,
            "CloudWatch Logs",
            f"a metric transformation with dimensions ({', '.join(sorted(dimensions))}) and a default value "
            f"({transformation['defaultValue']!r}) (InvalidParameterException: a dimensioned metric takes no default)",
            "drop default_value (a dimensioned metric reports only when a log event matches), or the dimensions",
        )
    pattern = metric_filter.inputs.get("pattern")
    if dimensions and isinstance(pattern, str) and pattern.strip() and pattern.strip()[0] not in "{[":
        yield _rejected(
            metric_filter,
            "CloudWatch Logs",
            f"dimensions ({', '.join(sorted(dimensions))}) on the filter pattern {pattern!r}, which is neither a JSON "
            "({ ... }) nor a space-delimited ([ ... ]) pattern (InvalidParameterException: The specified filter "
            "pattern does not support dimensions)",
            "drop the dimensions, or match with a JSON pattern whose fields the dimensions name "
            "(e.g. { $.responseStatus.code = 403 })",
        )
    if len(dimensions) > MAX_FILTER_DIMENSIONS:
        yield _rejected(
            metric_filter,
            "CloudWatch Logs",
            f"{len(dimensions)} dimensions in a metric transformation (at most {MAX_FILTER_DIMENSIONS})",
            f"keep at most {MAX_FILTER_DIMENSIONS} dimensions",
        )


def _kms_alias(alias: RenderedResource) -> Iterator[Finding]:
    name = alias.inputs.get("name")
    if not isinstance(name, str):
        return  # unknown at render time, or a name_prefix (the provider adds a suffix of its own)
    if name.startswith(KMS_RESERVED_ALIAS):
        yield _rejected(
            alias,
            "KMS",
            f"alias name {name!r} (CreateAlias: an alias may not begin with {KMS_RESERVED_ALIAS}, the prefix reserved for "
            "AWS managed keys; the provider refuses it at preview)",
            f"rename it without the aws/ segment, e.g. {'alias/' + name[len(KMS_RESERVED_ALIAS) :]!r}",
        )
    elif len(name) > KMS_ALIAS_MAX or not KMS_ALIAS_NAME.match(name):
        yield _rejected(
            alias,
            "KMS",
            f"alias name {name!r} (CreateAlias takes alias/ and then a-z, A-Z, 0-9, '/', '_' or '-', at most "
            f"{KMS_ALIAS_MAX} characters)",
            "name it alias/<letters, digits, / _ ->",
        )


def _key_policy_lockout(key: RenderedResource) -> Iterator[Finding]:
    """KMS's policy lockout safety check: CreateKey (and PutKeyPolicy) refuses a key policy that would not let the
    caller change the policy again (MalformedPolicyDocumentException: "The new key policy will not allow you to
    update the key policy in the future"), unless ``bypassPolicyLockoutSafetyCheck`` is set
    (https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateKey.html). The caller is whoever runs ``pulumi
    up``, which the program does not name, so only a policy that lets no AWS principal at all put the key policy
    (an account root, a role, a user, or ``*``) is judged: a service principal alone can never be the caller."""
    policy = iam_policy.document(key.inputs.get("policy"))
    if policy is None or key.inputs.get("bypassPolicyLockoutSafetyCheck") is True:
        return
    for statement in iam_policy.statements(policy):
        actions = [str(a).lower() for a in iam_policy.as_list(statement.get("Action"))]
        if statement.get("Effect") != "Allow" or not any(fnmatch.fnmatchcase("kms:putkeypolicy", a) for a in actions):
            continue
        principal = statement.get("Principal")
        named = (
            iam_policy.as_list(principal.get("AWS")) if isinstance(principal, dict) else iam_policy.as_list(principal)
        )
        if named:
            return
    yield _rejected(
        key,
        "KMS",
        "its key policy lets no AWS principal (no account root, role, user or '*') call kms:PutKeyPolicy, so the "
        "policy lockout safety check refuses the key (MalformedPolicyDocumentException: the new key policy will not "
        "allow you to update the key policy in the future)",
        'add the account\'s statement: {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::ACCOUNT:root"}, '
        '"Action": "kms:*", "Resource": "*"} (the default key policy), then grant services beside it',
    )


def _stream_capacity(stream: RenderedResource) -> Iterator[Finding]:
    details = stream.inputs.get("streamModeDetails")
    mode = "PROVISIONED" if details is None else lookup(details, "streamMode")
    raw = stream.inputs.get("shardCount")
    shards = number(raw)
    if raw is not None and shards is None:
        return  # a count known only at apply time
    if mode == "ON_DEMAND" and shards is not None and shards > 0:
        yield Finding(
            RULE,
            stream.urn,
            f"Kinesis stream {stream.name} is ON_DEMAND and sets shard_count {shards:g}: an on-demand stream sizes "
            'its own shards, and the provider refuses it at preview ("shard_count must not be set when stream_mode '
            'is ON_DEMAND"), so nothing is deployed',
            f"remove shard_count from {stream.name}, or set stream_mode_details.stream_mode to PROVISIONED to keep "
            f"{shards:g} shards",
        )
    elif mode == "PROVISIONED" and (shards is None or shards < 1):
        how = "sets no stream_mode_details, so it is PROVISIONED," if details is None else "is PROVISIONED"
        yield Finding(
            RULE,
            stream.urn,
            f"Kinesis stream {stream.name} {how} with {'no shard_count' if shards is None else f'shard_count {shards:g}'}"
            ": a provisioned stream needs at least one shard (CreateStream's ShardCount), and the provider refuses it "
            'at preview ("shard_count must be at least 1 when stream_mode is PROVISIONED"), so nothing is deployed',
            f"set shard_count (at least 1) on {stream.name}, or stream_mode_details.stream_mode='ON_DEMAND'",
        )


def _ranges(resource: RenderedResource) -> Iterator[Finding]:
    for key, allowed in RANGES.get(resource.type, {}).items():
        value = number(resource.inputs.get(key))
        if value is None or allowed.low <= value <= allowed.high or value in allowed.also:
            continue
        span = f"{allowed.low:,}" if allowed.low == allowed.high else f"{allowed.low:,}-{allowed.high:,}"
        span = f"{span} {allowed.unit}"
        takes = " or ".join([*(f"{v:,}" for v in sorted(allowed.also)), span])
        yield _rejected(
            resource,
            SERVICE_NAMES[resource.type],
            f"{allowed.api} {value:g} {allowed.unit} ({RANGE_ERRORS[resource.type]}: {takes})",
            f"set {key} to {takes}",
        )


def _alarm_periods(alarm: RenderedResource) -> Iterator[Finding]:
    periods = [alarm.inputs.get("period")]
    periods += [lookup(q, "metric.period") for q in alarm.inputs.get("metricQueries") or [] if isinstance(q, dict)]
    for period in (number(p) for p in periods):
        if period is not None and period not in SHORT_ALARM_PERIODS and (period <= 0 or period % 60):
            yield _rejected(
                alarm,
                "CloudWatch",
                f"an alarm period of {period:g} s (ValidationError: 10, 20, 30 or a multiple of 60)",
                "set the period to 10, 20, 30 or a multiple of 60 seconds",
            )
    yield from _alarm_range(alarm, [p for p in (number(p) for p in periods) if p])
    yield from _alarm_fields(alarm)


def _alarm_fields(alarm: RenderedResource) -> Iterator[Finding]:
    """PutMetricAlarm's cross-field constraints: M <= N, and what a metric math alarm takes beside its queries."""
    datapoints, evaluations = (number(alarm.inputs.get(k)) for k in ("datapointsToAlarm", "evaluationPeriods"))
    if datapoints is not None and evaluations is not None and datapoints > evaluations:
        yield _rejected(
            alarm,
            "CloudWatch",
            f"datapointsToAlarm {datapoints:g} over evaluationPeriods {evaluations:g}: an M-out-of-N alarm needs M <= "
            "N (ValidationError: DatapointsToAlarm must be less than or equal to EvaluationPeriods)",
            f"set evaluationPeriods to at least {datapoints:g} (N datapoints of one period each are evaluated), or "
            f"datapointsToAlarm to at most {evaluations:g}",
        )
    queries = [q for q in alarm.inputs.get("metricQueries") or [] if isinstance(q, dict)]
    if not queries:
        return
    single = [k for k in SINGLE_METRIC_FIELDS if alarm.inputs.get(k) not in (None, "", {}, [])]
    if single:
        yield _rejected(
            alarm,
            "CloudWatch",
            f"metricQueries beside {', '.join(single)}: a metric math alarm describes its metrics in its queries "
            "only (the provider's schema refuses metricName and dimensions beside metricQueries at preview, "
            "PutMetricAlarm the rest: ValidationError)",
            f"move {', '.join(single)} into metricQueries' metric blocks, or drop metricQueries",
        )
    yield from _query_ids(alarm, queries)
    returned = [str(q.get("id")) for q in queries if q.get("returnData") is True]
    if len(returned) > 1:
        yield _rejected(
            alarm,
            "CloudWatch",
            f"metric queries {', '.join(returned)} all set returnData: an alarm watches exactly one query "
            "(ValidationError)",
            "set returnData=True on the one expression the alarm watches and leave it off the others",
        )


def _query_ids(alarm: RenderedResource, queries: list[dict[str, Any]]) -> Iterator[Finding]:
    """Each MetricDataQuery Id starts with a lowercase letter, holds only letters, digits and underscores, and is
    unique in the alarm ("The first character must be a lowercase letter": API_MetricDataQuery.html; "Ids must be
    unique": PutMetricAlarm answers ValidationError for either, aws/aws-cdk#13434)."""
    ids = [q.get("id") for q in queries]
    for query_id in ids:
        if isinstance(query_id, str) and not METRIC_QUERY_ID.match(query_id):
            suggested = re.sub(r"[^a-zA-Z0-9_]", "_", query_id)
            suggested = suggested[:1].lower() + suggested[1:] if suggested[:1].isalpha() else f"m_{suggested}"
            yield _rejected(
                alarm,
                "CloudWatch",
                f"metric query id {query_id!r}: a MetricDataQuery id starts with a lowercase letter and holds only "
                "letters, digits and underscores (ValidationError: invalid metrics list), so the alarm is not created",
                f"rename it (e.g. {suggested!r}) and the references to it in the expressions",
            )
    seen = [i for i in ids if isinstance(i, str)]
    for query_id in sorted({i for i in seen if seen.count(i) > 1}):
        yield _rejected(
            alarm,
            "CloudWatch",
            f"two metric queries with id {query_id!r}: the ids of one alarm are unique (ValidationError)",
            "give each query its own id",
        )


def _alarm_range(alarm: RenderedResource, periods: list[float]) -> Iterator[Finding]:
    """Period x EvaluationPeriods within PutMetricAlarm's range (a metric math alarm's longest query period)."""
    evaluations = number(alarm.inputs.get("evaluationPeriods"))
    if not periods or evaluations is None:
        return
    period = max(periods)
    limit = SHORT_PERIOD_RANGE_S if period < HOUR_S else ALARM_RANGE_S
    if period * evaluations > limit:
        within = "one day (86,400 s) for a period under an hour" if limit < ALARM_RANGE_S else "seven days (604,800 s)"
        yield _rejected(
            alarm,
            "CloudWatch",
            f"period {period:g} s x evaluationPeriods {evaluations:g} = {period * evaluations:,.0f} s of evaluation "
            f"range (ValidationError: at most {within})",
            f"keep period x evaluationPeriods within {limit:,} s: a period of an hour or more allows seven days "
            f"(e.g. period 3600 and evaluationPeriods {int(period * evaluations // HOUR_S)})"
            if limit < ALARM_RANGE_S and period * evaluations <= ALARM_RANGE_S
            else f"keep period x evaluationPeriods within {limit:,} s",
        )


def _security_group_text(group: RenderedResource) -> Iterator[Finding]:
    for key in ("description", "name"):
        value = group.inputs.get(key)
        if isinstance(value, str) and not SECURITY_GROUP_TEXT.match(value):
            bad = sorted({c for c in value if not SECURITY_GROUP_TEXT.match(c)}) or ["(longer than 255)"]
            yield _rejected(
                group,
                "EC2",
                f"its {key} {value!r} has {''.join(bad)!r}, outside what CreateSecurityGroup takes for a VPC group "
                "(a-zA-Z0-9, spaces and ._-:/()#,@[]+=&;{}!$*: InvalidParameterValue)",
                f"remove those characters from the {key}",
            )


def _msk(msk: RenderedResource) -> Iterator[Finding]:
    brokers = number(msk.inputs.get("numberOfBrokerNodes"))
    info = msk.inputs.get("brokerNodeGroupInfo") or {}
    subnets = info.get("clientSubnets")
    if brokers is not None and isinstance(subnets, list) and subnets and brokers % len(subnets):
        yield _rejected(
            msk,
            "MSK",
            f"{brokers:g} brokers over {len(subnets)} client subnets (BadRequestException: the number of broker "
            "nodes must be a multiple of the Availability Zones in the client subnets)",
            f"use a multiple of {len(subnets)} brokers",
        )
    size = number(((info.get("storageInfo") or {}).get("ebsStorageInfo") or {}).get("volumeSize"))
    if size is not None and int(size) not in MSK_VOLUME_GIB:
        yield _rejected(msk, "MSK", f"a broker volume of {size:g} GiB (1-16384 allowed)", "size it within 1-16384 GiB")
    broker = info.get("instanceType")
    if isinstance(broker, str) and not broker.startswith(("kafka.", "express.")):
        yield _rejected(
            msk,
            "MSK",
            f"broker type {broker!r}: MSK brokers are kafka.* (standard) or express.* types, not EC2 names",
            f"use kafka.{broker.split('.', 1)[-1]} or another kafka.* type",
        )


def _replication_group(group: RenderedResource) -> Iterator[Finding]:
    inputs = group.inputs
    clusters = number(inputs.get("numCacheClusters"))
    replicas = number(inputs.get("replicasPerNodeGroup"))
    nodes = clusters if clusters is not None else (None if replicas is None else replicas + 1)
    failover, multi_az = inputs.get("automaticFailoverEnabled") is True, inputs.get("multiAzEnabled") is True
    if failover and nodes is not None and nodes < 2:
        yield _rejected(
            group,
            "ElastiCache",
            f"automatic failover with {nodes:g} node per shard (InvalidParameterCombination: failover needs a "
            "replica to promote)",
            "add a replica (num_cache_clusters >= 2 or replicas_per_node_group >= 1), or turn failover off",
        )
    if multi_az and inputs.get("automaticFailoverEnabled") is False:
        yield _rejected(
            group,
            "ElastiCache",
            "Multi-AZ with automatic failover off (InvalidParameterCombination: Multi-AZ requires it)",
            "enable automatic_failover_enabled with multi_az_enabled",
        )
    if inputs.get("authToken") and inputs.get("transitEncryptionEnabled") is not True:
        yield _rejected(
            group,
            "ElastiCache",
            "an AUTH token without in-transit encryption (InvalidParameterValue: the AUTH token is only supported "
            "when encryption-in-transit is enabled)",
            "set transit_encryption_enabled=True",
        )
    yield from _auth_token(group)
    azs = inputs.get("preferredCacheClusterAzs")
    if clusters is not None and isinstance(azs, list) and azs and len(azs) != int(clusters):
        yield _rejected(
            group,
            "ElastiCache",
            f"{len(azs)} preferred AZs for {clusters:g} cache clusters (the list names one AZ per cluster)",
            f"list {clusters:g} AZs, or drop preferred_cache_cluster_azs",
        )
    node_type = inputs.get("nodeType")
    if isinstance(node_type, str) and not node_type.startswith("cache."):
        yield _rejected(
            group,
            "ElastiCache",
            f"node type {node_type!r}: ElastiCache nodes are cache.* types",
            f"use cache.{node_type.split('.', 1)[-1]} or another cache.* type",
        )


def _auth_token(group: RenderedResource) -> Iterator[Finding]:
    """An AUTH token of 16 to 128 printable characters whose only non-alphanumerics are ``AUTH_TOKEN_SPECIAL``."""
    token = group.inputs.get("authToken")
    if token == REDACTED:  # a secret (a RandomPassword's result, config): judged on its value, never printed
        token = group.secret_inputs.get("authToken")
    if not isinstance(token, str) or not token:
        return
    refused = sorted({c for c in token if not (c.isascii() and c.isalnum()) and c not in AUTH_TOKEN_SPECIAL})
    if refused:
        why = f"holds {', '.join(repr(c) for c in refused)}: its only non-alphanumerics may be {AUTH_TOKEN_SPECIAL}"
    elif not AUTH_TOKEN_LENGTH[0] <= len(token) <= AUTH_TOKEN_LENGTH[1]:
        why = f"is {len(token)} characters, outside 16 to 128"
    else:
        return
    yield _rejected(
        group,
        "ElastiCache",
        f"an AUTH token that {why} (InvalidParameterValue; the provider checks the length at preview)",
        "make auth_token 16 to 128 characters of letters, digits and !&#$^<>- (e.g. random.RandomPassword("
        "length=32, special=False), or override_special='!&#$^<>-')",
    )


def _graviton(instance_type: str) -> bool | None:
    match = _FAMILY.match(instance_type)
    return None if match is None else "g" in match.group(3)


def _kubernetes(graph: Graph, node_group: RenderedResource) -> tuple[int, ...] | None:
    version = node_group.inputs.get("version")
    if not isinstance(version, str):
        clusters = [c for c in graph.referenced(node_group, "clusterName") if c.type == CLUSTER]
        version = clusters[0].inputs.get("version") if clusters else None
    try:
        return tuple(int(p) for p in version.split(".")[:2]) if isinstance(version, str) else None
    except ValueError:
        return None


def _node_group(graph: Graph, node_group: RenderedResource) -> Iterator[Finding]:
    inputs = node_group.inputs
    scaling = inputs.get("scalingConfig") or {}
    low, desired, high = (number(scaling.get(k)) for k in ("minSize", "desiredSize", "maxSize"))
    if high is not None and high < 1:
        yield _rejected(node_group, "EKS", f"maxSize {high:g} (InvalidParameterException: at least 1)", "set 1+")
    if None not in (low, desired, high) and not (low <= desired <= high):  # type: ignore[operator]
        yield _rejected(
            node_group,
            "EKS",
            f"scaling minSize {low:g}, desiredSize {desired:g}, maxSize {high:g} (InvalidParameterException: "
            "minSize <= desiredSize <= maxSize)",
            "order the three sizes",
        )
    update = inputs.get("updateConfig") or {}
    if "maxUnavailable" in update and "maxUnavailablePercentage" in update:
        yield _rejected(
            node_group, "EKS", "both maxUnavailable and maxUnavailablePercentage", "set one of the two update limits"
        )
    for key in ("maxUnavailable", "maxUnavailablePercentage"):
        value = number(update.get(key))
        if value is not None and not 1 <= value <= 100:
            yield _rejected(node_group, "EKS", f"updateConfig.{key} {value:g} (1-100 allowed)", "set it within 1-100")
    if inputs.get("launchTemplate"):
        for key, field in (("diskSize", "disk_size"), ("remoteAccess", "remote_access")):
            if inputs.get(key):
                yield _rejected(
                    node_group,
                    "EKS",
                    f"{field} with a launch template (InvalidParameterException: it must be specified within the "
                    "launch template)",
                    f"drop {field} and set it in the launch template",
                )
    template = launch_template(graph, node_group)
    if template is not None:
        yield from _template_conflicts(node_group, template)
    ami = inputs.get("amiType")
    if not isinstance(ami, str):
        return
    arm = "ARM_64" in ami
    for instance_type in inputs.get("instanceTypes") or []:
        graviton = _graviton(str(instance_type))
        if graviton is not None and graviton != arm and ami != "CUSTOM":
            yield _rejected(
                node_group,
                "EKS",
                f"instance type {instance_type} ({'arm64' if graviton else 'x86_64'}) with AMI type {ami} "
                "(InvalidParameterException: the instance type is not supported for the AMI type)",
                f"use an {'ARM_64' if graviton else 'x86_64'} AMI type, or an instance type of {ami}'s architecture",
            )
    kubernetes = _kubernetes(graph, node_group)
    if ami.startswith("AL2_") and kubernetes is not None and kubernetes > AL2_LAST_KUBERNETES:
        version = ".".join(map(str, kubernetes))
        yield _rejected(
            node_group,
            "EKS",
            f"AMI type {ami} on Kubernetes {version}: EKS publishes no Amazon Linux 2 AMI after 1.32",
            f"use the AL2023 equivalent ({ami.replace('AL2_', 'AL2023_', 1)}) or Bottlerocket",
        )


def _template_conflicts(node_group: RenderedResource, template: RenderedResource) -> Iterator[Finding]:
    """What CreateNodegroup refuses in the request, or in its launch template, when the other sets it too.

    EKS user guide, "Launch template configuration basics"
    (https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html): "Don't specify a setting in both
    places. If a setting exists where it shouldn't, then operations such as creating or updating a node group fail."
    Prohibited in the template: a network interface's subnet, the IAM instance profile, the shutdown and hibernate
    behaviour; in the request beside a template's AMI: the AMI type (other than CUSTOM); and "If you specify an
    instance type in a launch template ... you can't specify any instance types" in the request
    (InvalidRequestException: Cannot specify instance types in launch template and API request,
    terraform-aws-modules/terraform-aws-eks#1386). A template sets security groups at the instance or on its network
    interfaces, "but not both".
    """
    lt = template.inputs
    name = f"launch template {template.name}"
    types = node_group.inputs.get("instanceTypes") or []
    if lt.get("instanceType") and types:
        yield _rejected(
            node_group,
            "EKS",
            f"instance_types {list(types)} with {name}, which sets instance_type {lt['instanceType']} "
            "(InvalidRequestException: Cannot specify instance types in launch template and API request)",
            "set the instance type in one place: drop the node group's instance_types, or the template's instance_type "
            "(several types, e.g. for Spot, go in the node group)",
        )
    ami = node_group.inputs.get("amiType")
    if lt.get("imageId") and isinstance(ami, str) and ami != "CUSTOM":
        yield _rejected(
            node_group,
            "EKS",
            f"ami_type {ami} with {name}, which sets image_id (InvalidParameterException: an AMI type other than "
            "CUSTOM beside a launch template's image id)",
            "drop ami_type (or set it to CUSTOM) while the template names the AMI, or drop the template's image_id",
        )
    prohibited = [
        (bool(lt.get("iamInstanceProfile")), "iam_instance_profile", "the node group's node_role_arn gives the role"),
        (
            any(isinstance(n, dict) and n.get("subnetId") for n in lt.get("networkInterfaces") or []),
            "a network interface's subnet_id",
            "the node group's subnet_ids place the nodes",
        ),
        (
            bool(lt.get("instanceInitiatedShutdownBehavior")),
            "instance_initiated_shutdown_behavior",
            "EKS controls the instance lifecycle",
        ),
        (bool((lt.get("hibernationOptions") or {}).get("configured")), "hibernation_options", "EKS controls it"),
        (
            bool(lt.get("vpcSecurityGroupIds") or lt.get("securityGroupNames"))
            and any(isinstance(n, dict) and n.get("securityGroups") for n in lt.get("networkInterfaces") or []),
            "security groups both on the instance (vpc_security_group_ids) and on a network interface",
            "set them in one of the two places",
        ),
    ]
    for present, field, why in prohibited:
        if present:
            yield _rejected(
                node_group,
                "EKS",
                f"{name} sets {field}, which a managed node group's launch template may not (the node group fails to "
                f"create or update: {why})",
                f"remove {field} from {template.name}",
            )


def _days(value: Any) -> float | None:
    return number(value.get("days")) if isinstance(value, dict) else None


def _lifecycle(lifecycle: RenderedResource) -> Iterator[Finding]:
    for rule in lifecycle.inputs.get("rules") or []:
        if not isinstance(rule, dict) or rule.get("status") == "Disabled":
            continue
        name = rule.get("id") or "?"
        transitions = [t for t in rule.get("transitions") or [] if isinstance(t, dict)]
        noncurrent = [t for t in rule.get("noncurrentVersionTransitions") or [] if isinstance(t, dict)]
        for transition, days_key in [(t, "days") for t in transitions] + [(t, "noncurrentDays") for t in noncurrent]:
            days, storage = number(transition.get(days_key)), transition.get("storageClass")
            least = INFREQUENT_ACCESS.get(str(storage))
            if days is not None and least is not None and days < least:
                yield _rejected(
                    lifecycle,
                    "S3",
                    f"rule {name!r} moves objects to {storage} after {days:g} days (InvalidArgument: at least "
                    f"{least} for {storage})",
                    f"transition to {storage} at {least} days or later, or to another class",
                )
        yield from _lifecycle_numbers(lifecycle, name, rule)
        yield from _unfiltered_actions(lifecycle, name, rule)
        expires = _days(rule.get("expiration"))
        latest = max((d for t in transitions if (d := number(t.get("days"))) is not None), default=None)
        if expires is not None and latest is not None and expires <= latest:
            yield _rejected(
                lifecycle,
                "S3",
                f"rule {name!r} expires objects after {expires:g} days, not after its last transition at "
                f"{latest:g} (InvalidArgument: Expiration days must be greater than Transition days)",
                "expire after the last transition, or drop the transition",
            )


# Lifecycle actions S3 applies only to a rule whose filter has no tags and no object size: an upload in progress
# has neither, nor has a delete marker ("InvalidRequest: <action> cannot be specified with Tags.").
UNFILTERED_ACTIONS = {
    "abortIncompleteMultipartUpload": "AbortIncompleteMultipartUpload",
    "expiredObjectDeleteMarker": "ExpiredObjectDeleteMarker",
}


def _filter_narrowing(rule: dict[str, Any]) -> str | None:
    """What of a lifecycle rule's filter narrows it by tag or object size: "Tags", "Object Size", or None."""
    found: list[str] = []
    for block in (rule.get("filter"), lookup(rule, "filter.and")):
        if not isinstance(block, dict):
            continue
        if block.get("tag") or block.get("tags"):
            found.append("Tags")
        if block.get("objectSizeGreaterThan") is not None or block.get("objectSizeLessThan") is not None:
            found.append("Object Size")
    return found[0] if found else None


def _unfiltered_actions(lifecycle: RenderedResource, name: str, rule: dict[str, Any]) -> Iterator[Finding]:
    narrowing = _filter_narrowing(rule)
    if narrowing is None:
        return
    expiration = rule.get("expiration")
    present = {
        "abortIncompleteMultipartUpload": isinstance(rule.get("abortIncompleteMultipartUpload"), dict),
        "expiredObjectDeleteMarker": isinstance(expiration, dict)
        and expiration.get("expiredObjectDeleteMarker") is True,
    }
    for key, api in UNFILTERED_ACTIONS.items():
        if present[key]:
            yield _rejected(
                lifecycle,
                "S3",
                f"rule {name!r} has {api} and a filter on {narrowing.lower()} (InvalidRequest: {api} cannot be "
                f"specified with {narrowing}.), so PutBucketLifecycleConfiguration refuses the whole configuration "
                "and none of its rules apply",
                f"move {key} into a rule of its own whose filter has only a prefix (or none)",
            )


def _count(value: Any) -> float | None:
    """A number, or the digits the provider's nullable integers render as ("200")."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return float(value)
    return number(value)


def _lifecycle_numbers(lifecycle: RenderedResource, name: str, rule: dict[str, Any]) -> Iterator[Finding]:
    for (action, key), allowed in LIFECYCLE_RANGES.items():
        blocks = rule.get(action)
        for block in blocks if isinstance(blocks, list) else [blocks]:
            value = _count(block.get(key)) if isinstance(block, dict) else None
            if value is None or allowed.low <= value <= allowed.high:
                continue
            yield _rejected(
                lifecycle,
                "S3",
                f"rule {name!r} sets {action}.{key}={value:g}, outside {allowed.api}'s {allowed.low}-{allowed.high} "
                f"{allowed.unit} (InvalidArgument), so PutBucketLifecycleConfiguration refuses the whole "
                "configuration and none of its rules apply",
                f"set {key} between {allowed.low} and {allowed.high} (noncurrentDays bounds how long the older "
                "versions are kept; AWS Backup or replication keeps a longer history)",
            )


def _zone_domain(graph: Graph, record: RenderedResource) -> str | None:
    zone = zone_of(graph, record)
    return None if zone is None else str(zone.inputs["name"]).rstrip(".").lower()


def _record(graph: Graph, record: RenderedResource) -> Iterator[Finding]:
    inputs = record.inputs
    alias, ttl, values = inputs.get("aliases"), inputs.get("ttl"), inputs.get("records")
    if alias and ttl is not None:
        yield _rejected(
            record, "Route 53", "an alias record with a TTL (alias records take the target's)", "drop the ttl"
        )
    if values and not alias and ttl is None:
        yield _rejected(record, "Route 53", "a record with values and no TTL", "set a ttl (e.g. 300)")
    if any(inputs.get(policy) for policy in ROUTING_POLICIES) and not inputs.get("setIdentifier"):
        yield _rejected(
            record,
            "Route 53",
            "a routing policy without a set identifier (InvalidInput: SetIdentifier is required)",
            "give each record of the policy a unique set_identifier",
        )
    if inputs.get("type") != "CNAME":
        return
    if isinstance(values, list) and len(values) > 1:
        yield _rejected(
            record, "Route 53", f"a CNAME with {len(values)} values (a CNAME has exactly one)", "keep one value"
        )
    domain, name = _zone_domain(graph, record), inputs.get("name")
    if domain is not None and isinstance(name, str) and name.rstrip(".").lower() in (domain, "@", ""):
        yield _rejected(
            record,
            "Route 53",
            f"a CNAME at the apex of {domain} (InvalidChangeBatch: RRSet of type CNAME is not permitted at apex)",
            "use an alias A/AAAA record at the apex, or a CNAME on a subdomain",
        )
