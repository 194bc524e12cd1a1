"""Pulumi AWS resources as the CloudFormation resources that describe the same API call, for cfn-lint to judge.

The Pulumi AWS provider and CloudFormation both wrap one service API, so most inputs are the same field under
another name: ``visibilityTimeoutSeconds`` is SQS's ``VisibilityTimeout`` in both. Each entry below names the
CloudFormation type and the inputs whose names differ; ``cfn_shape`` matches every other input to the
CloudFormation schema case-insensitively and drops what it cannot place. A few inputs are laid out differently
(a DynamoDB key schema as ``hashKey``/``rangeKey``, a security group's rule with a list of CIDRs, a target
group's health check as one block): ``prepare`` (``cfn_layouts``) rewrites those into CloudFormation's layout first.

A type is here when CloudFormation's schema for it, or a cfn-lint rule on it, holds something the service
refuses at create time. Dropping an input is always safe: the check then says nothing about it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tokenplane.proof.deployability import cfn_layouts as layout
from tokenplane.proof.deployability import cfn_s3

Inputs = dict[str, Any]


@dataclass(frozen=True)
class CfnType:
    """How one Pulumi AWS type reads as a CloudFormation resource.

    Attributes:
        type: the CloudFormation type, e.g. ``AWS::SQS::Queue``.
        renames: Pulumi input -> CloudFormation property, where the names differ beyond case.
        prepare: rewrites inputs laid out differently (runs before ``renames``).
        variant: the CloudFormation type for these inputs, where one Pulumi type stands for two (a security
            group rule of either direction).
    """

    type: str
    renames: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Inputs], Inputs] | None = None
    variant: Callable[[Inputs], str] | None = None

    def type_for(self, inputs: Inputs) -> str:
        return self.variant(inputs) if self.variant is not None else self.type


TYPES: dict[str, CfnType] = {
    "aws:sqs/queue:Queue": CfnType(
        "AWS::SQS::Queue",
        {
            "name": "QueueName",
            "visibilityTimeoutSeconds": "VisibilityTimeout",
            "messageRetentionSeconds": "MessageRetentionPeriod",
            "receiveWaitTimeSeconds": "ReceiveMessageWaitTimeSeconds",
            "maxMessageSize": "MaximumMessageSize",
        },
        layout.documents("redrivePolicy", "redriveAllowPolicy"),
    ),
    "aws:sqs/queuePolicy:QueuePolicy": CfnType(
        "AWS::SQS::QueuePolicy",
        {"policy": "PolicyDocument"},
        layout.chain(layout.documents("policy"), lambda i: {**i, "Queues": [i.get("queueUrl")]}),
    ),
    "aws:sns/topic:Topic": CfnType("AWS::SNS::Topic", {"name": "TopicName"}),
    "aws:cloudwatch/metricAlarm:MetricAlarm": CfnType(
        "AWS::CloudWatch::Alarm", {"name": "AlarmName", "okActions": "OKActions"}
    ),
    "aws:cloudwatch/logGroup:LogGroup": CfnType("AWS::Logs::LogGroup", {"name": "LogGroupName"}),
    "aws:cloudwatch/eventRule:EventRule": CfnType("AWS::Events::Rule", {}, layout.documents("eventPattern")),
    "aws:dynamodb/table:Table": CfnType("AWS::DynamoDB::Table", {"name": "TableName"}, layout.dynamodb_table),
    # reservedConcurrentExecutions -1 is the provider's "unreserved", never sent to Lambda (cfn_layouts.lambda_function)
    "aws:lambda/function:Function": CfnType("AWS::Lambda::Function", {"name": "FunctionName"}, layout.lambda_function),
    "aws:ec2/securityGroup:SecurityGroup": CfnType(
        "AWS::EC2::SecurityGroup", {"description": "GroupDescription", "name": "GroupName"}, layout.security_group
    ),
    "aws:ec2/securityGroupRule:SecurityGroupRule": CfnType(
        "AWS::EC2::SecurityGroupIngress",
        prepare=layout.group_rule,
        variant=lambda i: (
            "AWS::EC2::SecurityGroupEgress" if i.get("type") == "egress" else "AWS::EC2::SecurityGroupIngress"
        ),
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": CfnType(
        "AWS::EC2::SecurityGroupIngress",
        {
            "securityGroupId": "GroupId",
            "cidrIpv4": "CidrIp",
            "cidrIpv6": "CidrIpv6",
            "referencedSecurityGroupId": "SourceSecurityGroupId",
            "prefixListId": "SourcePrefixListId",
        },
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": CfnType(
        "AWS::EC2::SecurityGroupEgress",
        {
            "securityGroupId": "GroupId",
            "cidrIpv4": "CidrIp",
            "cidrIpv6": "CidrIpv6",
            "referencedSecurityGroupId": "DestinationSecurityGroupId",
            "prefixListId": "DestinationPrefixListId",
        },
    ),
    "aws:ec2/vpc:Vpc": CfnType("AWS::EC2::VPC"),
    "aws:ec2/subnet:Subnet": CfnType("AWS::EC2::Subnet"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": CfnType(
        "AWS::EC2::VPCEndpoint", {"policy": "PolicyDocument"}, layout.documents("policy")
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": CfnType("AWS::EC2::LaunchTemplate", {}, layout.launch_template),
    "aws:ebs/volume:Volume": CfnType("AWS::EC2::Volume", {"type": "VolumeType"}),
    "aws:ecr/repository:Repository": CfnType(
        "AWS::ECR::Repository", {"name": "RepositoryName", "encryptionConfigurations": "EncryptionConfiguration"}
    ),
    "aws:eks/cluster:Cluster": CfnType("AWS::EKS::Cluster", {"vpcConfig": "ResourcesVpcConfig"}, layout.cluster),
    "aws:eks/nodeGroup:NodeGroup": CfnType(
        "AWS::EKS::Nodegroup", {"nodeGroupName": "NodegroupName", "nodeRoleArn": "NodeRole", "subnetIds": "Subnets"}
    ),
    "aws:eks/addon:Addon": CfnType("AWS::EKS::Addon", {"resolveConflictsOnCreate": "ResolveConflicts"}),
    "aws:eks/accessEntry:AccessEntry": CfnType("AWS::EKS::AccessEntry", {"userName": "Username"}),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": CfnType("AWS::EKS::PodIdentityAssociation"),
    "aws:iam/role:Role": CfnType(
        "AWS::IAM::Role",
        {"name": "RoleName", "assumeRolePolicy": "AssumeRolePolicyDocument"},
        layout.documents("assumeRolePolicy"),
    ),
    "aws:iam/policy:Policy": CfnType(
        "AWS::IAM::ManagedPolicy", {"name": "ManagedPolicyName", "policy": "PolicyDocument"}, layout.documents("policy")
    ),
    "aws:iam/rolePolicy:RolePolicy": CfnType(
        "AWS::IAM::RolePolicy",
        {"name": "PolicyName", "role": "RoleName", "policy": "PolicyDocument"},
        layout.documents("policy"),
    ),
    "aws:s3/bucket:Bucket": CfnType("AWS::S3::Bucket", {"bucket": "BucketName"}),
    "aws:s3/bucketV2:BucketV2": CfnType("AWS::S3::Bucket", {"bucket": "BucketName"}),
    "aws:secretsmanager/secret:Secret": CfnType("AWS::SecretsManager::Secret"),
    "aws:kms/key:Key": CfnType(
        "AWS::KMS::Key",
        {
            "customerMasterKeySpec": "KeySpec",
            "deletionWindowInDays": "PendingWindowInDays",
            "policy": "KeyPolicy",
            "isEnabled": "Enabled",
        },
        layout.documents("policy"),
    ),
    "aws:kms/alias:Alias": CfnType("AWS::KMS::Alias", {"name": "AliasName"}),
    "aws:route53/record:Record": CfnType(
        "AWS::Route53::RecordSet",
        {"records": "ResourceRecords", "zoneId": "HostedZoneId", "multivalueAnswerRoutingPolicy": "MultiValueAnswer"},
        layout.record,
    ),
    "aws:elasticache/replicationGroup:ReplicationGroup": CfnType(
        "AWS::ElastiCache::ReplicationGroup",
        {
            "description": "ReplicationGroupDescription",
            "nodeType": "CacheNodeType",
            "parameterGroupName": "CacheParameterGroupName",
            "subnetGroupName": "CacheSubnetGroupName",
            "multiAzEnabled": "MultiAZEnabled",
            "maintenanceWindow": "PreferredMaintenanceWindow",
            "preferredCacheClusterAzs": "PreferredCacheClusterAZs",
        },
    ),
    "aws:elasticache/subnetGroup:SubnetGroup": CfnType(
        "AWS::ElastiCache::SubnetGroup", {"name": "CacheSubnetGroupName"}
    ),
    "aws:msk/cluster:Cluster": CfnType("AWS::MSK::Cluster", {}, layout.msk),
    "aws:rds/instance:Instance": CfnType(
        "AWS::RDS::DBInstance",
        {
            "instanceClass": "DBInstanceClass",
            "identifier": "DBInstanceIdentifier",
            "dbName": "DBName",
            "username": "MasterUsername",
            "password": "MasterUserPassword",
            "multiAz": "MultiAZ",
            "dbSubnetGroupName": "DBSubnetGroupName",
            "vpcSecurityGroupIds": "VPCSecurityGroups",
            "performanceInsightsEnabled": "EnablePerformanceInsights",
            "parameterGroupName": "DBParameterGroupName",
            "caCertIdentifier": "CACertificateIdentifier",
            "backupWindow": "PreferredBackupWindow",
            "maintenanceWindow": "PreferredMaintenanceWindow",
            "iamDatabaseAuthenticationEnabled": "EnableIAMDatabaseAuthentication",
            "enabledCloudwatchLogsExports": "EnableCloudwatchLogsExports",
        },
    ),
    "aws:rds/subnetGroup:SubnetGroup": CfnType(
        "AWS::RDS::DBSubnetGroup", {"name": "DBSubnetGroupName", "description": "DBSubnetGroupDescription"}
    ),
    "aws:lb/targetGroup:TargetGroup": CfnType("AWS::ElasticLoadBalancingV2::TargetGroup", {}, layout.target_group),
    "aws:lb/loadBalancer:LoadBalancer": CfnType(
        "AWS::ElasticLoadBalancingV2::LoadBalancer", {"loadBalancerType": "Type"}, layout.load_balancer
    ),
    "aws:lb/listener:Listener": CfnType("AWS::ElasticLoadBalancingV2::Listener", {}, layout.listener),
    "aws:ssm/parameter:Parameter": CfnType("AWS::SSM::Parameter"),
    "aws:efs/fileSystem:FileSystem": CfnType("AWS::EFS::FileSystem"),
    "aws:efs/mountTarget:MountTarget": CfnType("AWS::EFS::MountTarget"),
    "aws:efs/accessPoint:AccessPoint": CfnType("AWS::EFS::AccessPoint"),
    "aws:fsx/lustreFileSystem:LustreFileSystem": CfnType("AWS::FSx::FileSystem", {}, layout.lustre),
    "aws:kinesis/stream:Stream": CfnType("AWS::Kinesis::Stream", {"retentionPeriod": "RetentionPeriodHours"}),
    "aws:sfn/stateMachine:StateMachine": CfnType(
        "AWS::StepFunctions::StateMachine",
        {"name": "StateMachineName", "type": "StateMachineType"},
        layout.documents("definition"),
    ),
    "aws:backup/plan:Plan": CfnType("AWS::Backup::BackupPlan", {}, layout.backup_plan),
    # Same names and layout: tag maps become Key/Value lists and ``times`` a list of one (cfn_shape).
    "aws:dlm/lifecyclePolicy:LifecyclePolicy": CfnType("AWS::DLM::LifecyclePolicy"),
    "aws:lambda/eventSourceMapping:EventSourceMapping": CfnType("AWS::Lambda::EventSourceMapping"),
    "aws:sns/topicSubscription:TopicSubscription": CfnType(
        "AWS::SNS::Subscription", {"topic": "TopicArn"}, layout.documents("filterPolicy", "redrivePolicy")
    ),
    "aws:sns/topicPolicy:TopicPolicy": CfnType(
        "AWS::SNS::TopicPolicy", {}, layout.policy_on("arn", "Topics", listed=True)
    ),
    "aws:s3/bucketPolicy:BucketPolicy": CfnType(
        "AWS::S3::BucketPolicy", {}, layout.policy_on("bucket", "Bucket", listed=False)
    ),
    "aws:rds/cluster:Cluster": CfnType(
        "AWS::RDS::DBCluster",
        {
            "clusterIdentifier": "DBClusterIdentifier",
            "masterPassword": "MasterUserPassword",
            "dbSubnetGroupName": "DBSubnetGroupName",
            "dbClusterInstanceClass": "DBClusterInstanceClass",
            "serverlessv2ScalingConfiguration": "ServerlessV2ScalingConfiguration",
            "preferredBackupWindow": "PreferredBackupWindow",
        },
    ),
    "aws:rds/clusterInstance:ClusterInstance": CfnType(
        "AWS::RDS::DBInstance",
        {
            "identifier": "DBInstanceIdentifier",
            "clusterIdentifier": "DBClusterIdentifier",
            "instanceClass": "DBInstanceClass",
        },
    ),
    "aws:elasticache/cluster:Cluster": CfnType(
        "AWS::ElastiCache::CacheCluster",
        {
            "clusterId": "ClusterName",
            "nodeType": "CacheNodeType",
            "parameterGroupName": "CacheParameterGroupName",
            "subnetGroupName": "CacheSubnetGroupName",
            "securityGroupIds": "VpcSecurityGroupIds",
        },
    ),
    "aws:autoscaling/group:Group": CfnType(
        "AWS::AutoScaling::AutoScalingGroup", {"vpcZoneIdentifiers": "VPCZoneIdentifier"}, layout.auto_scaling_group
    ),
    "aws:appautoscaling/target:Target": CfnType("AWS::ApplicationAutoScaling::ScalableTarget"),
    "aws:cloudwatch/logSubscriptionFilter:LogSubscriptionFilter": CfnType(
        "AWS::Logs::SubscriptionFilter", {"logGroup": "LogGroupName", "name": "FilterName"}
    ),
    "aws:cloudwatch/logMetricFilter:LogMetricFilter": CfnType("AWS::Logs::MetricFilter", {}, layout.metric_filter),
    "aws:ec2/flowLog:FlowLog": CfnType(
        "AWS::EC2::FlowLog", {"iamRoleArn": "DeliverLogsPermissionArn"}, layout.flow_log
    ),
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": CfnType(
        "AWS::IAM::OIDCProvider", {"clientIdLists": "ClientIdList", "thumbprintLists": "ThumbprintList"}
    ),
    "aws:ec2/instance:Instance": CfnType(
        "AWS::EC2::Instance", {"ami": "ImageId", "vpcSecurityGroupIds": "SecurityGroupIds"}
    ),
    "aws:opensearch/domain:Domain": CfnType("AWS::OpenSearchService::Domain"),
    "aws:eks/fargateProfile:FargateProfile": CfnType(
        "AWS::EKS::FargateProfile", {"podExecutionRoleArn": "PodExecutionRoleArn", "subnetIds": "Subnets"}
    ),
    "aws:acm/certificate:Certificate": CfnType("AWS::CertificateManager::Certificate"),
    "aws:route53/healthCheck:HealthCheck": CfnType("AWS::Route53::HealthCheck", {}, layout.health_check),
    "aws:cloudwatch/compositeAlarm:CompositeAlarm": CfnType(
        "AWS::CloudWatch::CompositeAlarm", {"okActions": "OKActions"}, layout.composite_alarm
    ),
    "aws:scheduler/schedule:Schedule": CfnType("AWS::Scheduler::Schedule", {}, layout.schedule),
    # The qualifier and statement ID have no place of their own in CloudFormation's permission.
    "aws:lambda/permission:Permission": CfnType(
        "AWS::Lambda::Permission",
        {"function": "FunctionName"},
        layout.without("qualifier", "statementId", "statementIdPrefix"),
    ),
    "aws:lambda/functionUrl:FunctionUrl": CfnType(
        "AWS::Lambda::Url", {"functionName": "TargetFunctionArn", "authorizationType": "AuthType"}
    ),
    "aws:lambda/alias:Alias": CfnType("AWS::Lambda::Alias", {}, layout.alias),
    "aws:iam/instanceProfile:InstanceProfile": CfnType(
        "AWS::IAM::InstanceProfile", {"name": "InstanceProfileName"}, layout.instance_profile
    ),
    "aws:iam/user:User": CfnType("AWS::IAM::User", {"name": "UserName"}),
    "aws:ec2/natGateway:NatGateway": CfnType("AWS::EC2::NatGateway", {"privateIp": "PrivateIpAddress"}),
    "aws:ec2/placementGroup:PlacementGroup": CfnType("AWS::EC2::PlacementGroup", {"name": "GroupName"}),
    "aws:athena/workgroup:Workgroup": CfnType(
        "AWS::Athena::WorkGroup", {"configuration": "WorkGroupConfiguration"}, layout.workgroup
    ),
    "aws:ecr/pullThroughCacheRule:PullThroughCacheRule": CfnType("AWS::ECR::PullThroughCacheRule"),
    "aws:wafv2/ipSet:IpSet": CfnType("AWS::WAFv2::IPSet"),
    "aws:wafv2/webAcl:WebAcl": CfnType("AWS::WAFv2::WebACL", {}, layout.web_acl),
    "aws:kinesis/firehoseDeliveryStream:FirehoseDeliveryStream": CfnType(
        "AWS::KinesisFirehose::DeliveryStream", {}, layout.firehose
    ),
    "aws:cloudtrail/trail:Trail": CfnType(
        "AWS::CloudTrail::Trail",
        {"name": "TrailName", "enableLogging": "IsLogging", "cloudWatchLogsGroupArn": "CloudWatchLogsLogGroupArn"},
    ),
    "aws:autoscaling/policy:Policy": CfnType("AWS::AutoScaling::ScalingPolicy", {"name": "PolicyName"}),
    "aws:appautoscaling/policy:Policy": CfnType("AWS::ApplicationAutoScaling::ScalingPolicy", {"name": "PolicyName"}),
    # The bucket sub-resources, under the provider's names and their ``V2`` aliases (cfn_s3).
    **{
        f"aws:s3/{token}:{token[0].upper()}{token[1:]}": CfnType("AWS::S3::Bucket", {}, prepare)
        for base, prepare in (
            ("bucketLifecycleConfiguration", cfn_s3.lifecycle),
            ("bucketVersioning", cfn_s3.versioning),
            ("bucketServerSideEncryptionConfiguration", cfn_s3.encryption),
            ("bucketCorsConfiguration", cfn_s3.cors),
        )
        for token in (base, f"{base}V2")
    },
    "aws:s3/bucketReplicationConfig:BucketReplicationConfig": CfnType("AWS::S3::Bucket", {}, cfn_s3.replication),
}
