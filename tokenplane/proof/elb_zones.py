"""The hosted zone of each region's load balancers: what a Route 53 alias to one names, and its ``zoneId`` output.

The render's mocks give a load balancer the zone AWS would (``render.mock_outputs``), and ``alias-target-zone``
judges an alias's zone by its target's name.
"""

from __future__ import annotations

# Region -> (Application and Classic Load Balancers' zone, Network Load Balancers' zone): AWS's "Elastic Load
# Balancing endpoints and quotas" (https://docs.aws.amazon.com/general/latest/gr/elb.html#elb_region, read
# 2026-12-06); the same ids as terraform-provider-aws's HostedZoneIdPerRegionALBMap/NLBMap
# (internal/service/elbv2/hosted_zone_id_data_source.go).
ELB_ZONES: dict[str, tuple[str, str]] = {
    "af-south-1": ("Z268VQBMOI5EKX", "Z203XCE67M25HM"),
    "ap-east-1": ("Z3DQVH9N71FHZ0", "Z12Y7K3UBGUAD1"),
    "ap-northeast-1": ("Z14GRHDCWA56QT", "Z31USIVHYNEOWT"),
    "ap-northeast-2": ("ZWKZPGTI48KDX", "ZIBE1TIR4HY56"),
    "ap-northeast-3": ("Z5LXEXXYW11ES", "Z1GWIQ4HH19I5X"),
    "ap-south-1": ("ZP97RAFLXTNZK", "ZVDDRBQ08TROA"),
    "ap-south-2": ("Z0173938T07WNTVAEPZN", "Z0711778386UTO08407HT"),
    "ap-southeast-1": ("Z1LMS91P8CMLE5", "ZKVM4W9LS7TM"),
    "ap-southeast-2": ("Z1GM3OXH4ZPM65", "ZCT6FZBF4DROD"),
    "ap-southeast-3": ("Z08888821HLRG5A9ZRTER", "Z01971771FYVNCOVWJU1G"),
    "ap-southeast-4": ("Z09517862IB2WZLPXG76F", "Z01156963G8MIIL7X90IV"),
    "ca-central-1": ("ZQSVJUPU6J1EY", "Z2EPGBW3API2WT"),
    "cn-north-1": ("Z1GDH35T77C1KE", "Z3QFB96KMJ7ED6"),
    "cn-northwest-1": ("ZM7IZAIOVVDZF", "ZQEIKTCZ8352D"),
    "eu-central-1": ("Z215JYRZR1TBD5", "Z3F0SRJ5LGBH90"),
    "eu-central-2": ("Z06391101F2ZOEP8P5EB3", "Z02239872DOALSIDCX66S"),
    "eu-north-1": ("Z23TAZ6LKFMNIO", "Z1UDT6IFJ4EJM"),
    "eu-south-1": ("Z3ULH7SSC9OV64", "Z23146JA1KNAFP"),
    "eu-south-2": ("Z0956581394HF5D5LXGAP", "Z1011216NVTVYADP1SSV"),
    "eu-west-1": ("Z32O12XQLNTSW2", "Z2IFOLAFXWLO4F"),
    "eu-west-2": ("ZHURV8PSTC4K8", "ZD4D7Y8KGAS4G"),
    "eu-west-3": ("Z3Q77PNBQS71R4", "Z1CMS0P5QUZ6D5"),
    "me-central-1": ("Z08230872XQRWHG2XF6I", "Z00282643NTTLPANJJG2P"),
    "me-south-1": ("ZS929ML54UICD", "Z3QSRYVP46NYYV"),
    "sa-east-1": ("Z2P70J7HTTTPLU", "ZTK26PT1VY4CU"),
    "us-east-1": ("Z35SXDOTRQ7X7K", "Z26RNL4JYFTOTI"),
    "us-east-2": ("Z3AADJGX6KTTL2", "ZLMOA37VPKANP"),
    "us-gov-east-1": ("Z166TLBEWOO7G0", "Z1ZSMQQ6Q24QQ8"),
    "us-gov-west-1": ("Z33AYJ8TM3BH4J", "ZMG1MZ2THAWF1"),
    "us-west-1": ("Z368ELLRRE2KJ0", "Z24FKFUX50B4VW"),
    "us-west-2": ("Z1H1FL5HABSF5", "Z18D5FSROUN65G"),
}
