"""An insecure program, on purpose: every resource here breaks a rule of the policy pack.

``tokenplane check --program examples/insecure`` must flag each of them; the
tests hold it to that.
"""

import pulumi_aws as aws
import pulumi_kubernetes as k8s

vpc = aws.ec2.Vpc("vpc", cidr_block="10.0.0.0/16")
# Two subnets in ONE AZ: a node group across them dies with that AZ.
subnet_a = aws.ec2.Subnet("subnet-a", vpc_id=vpc.id, cidr_block="10.0.1.0/24", availability_zone="eu-west-1a")
subnet_b = aws.ec2.Subnet("subnet-b", vpc_id=vpc.id, cidr_block="10.0.2.0/24", availability_zone="eu-west-1a")

# Every port, from anywhere.
aws.ec2.SecurityGroup(
    "open",
    vpc_id=vpc.id,
    ingress=[aws.ec2.SecurityGroupIngressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"])],
)
aws.ebs.Volume("data", availability_zone="eu-west-1a", size=100)  # not encrypted
aws.rds.Instance(
    "db",
    engine="postgres",
    instance_class="db.t3.micro",
    allocated_storage=20,
    username="app",
    manage_master_user_password=True,
    publicly_accessible=True,  # on the internet, and
    storage_encrypted=False,  # unencrypted
    # Not one of its policy defects: without a final snapshot name the provider refuses the destroy
    # (deployability's database-recoverable), which would hide the one deployability finding the tests expect.
    final_snapshot_identifier="db-final",
)
aws.iam.Policy(
    "admin", policy='{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'
)
user = aws.iam.User("ci")
aws.iam.AccessKey("ci-key", user=user.name)  # a long-lived key

role = aws.iam.Role(
    "nodes",
    assume_role_policy='{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
    '"Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}',
)
aws.eks.NodeGroup(
    "workers",
    cluster_name="main",
    node_role_arn=role.arn,
    subnet_ids=[subnet_a.id, subnet_b.id],
    scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=2, max_size=4, desired_size=2),
)

# A bare Pod: latest tag, privileged, on the host's network, a hostPath mount, running as root.
k8s.core.v1.Pod(
    "web",
    metadata={"name": "web", "namespace": "default"},
    spec={
        "hostNetwork": True,
        "containers": [
            {
                "name": "nginx",
                "image": "nginx:latest",
                "securityContext": {"privileged": True, "runAsUser": 0},
                "volumeMounts": [{"name": "host", "mountPath": "/host"}],
            }
        ],
        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
    },
)
# A CronJob, which the pack used to skip: root, writable root filesystem, no seccomp.
k8s.batch.v1.CronJob(
    "cleanup",
    metadata={"name": "cleanup", "namespace": "default"},
    spec={
        "schedule": "0 * * * *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [
                            {"name": "cleanup", "image": "busybox", "command": ["sh", "-c", "rm -rf /tmp/*"]}
                        ],
                    }
                }
            }
        },
    },
)
