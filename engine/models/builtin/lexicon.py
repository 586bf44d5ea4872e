"""Word lists the builtin rules lean on: surnames, role words, and words that only look like names.

Invariant: these lists only ever *narrow* what the patterns in rules.py accept. A Chinese name
must start with one of the common surnames below and must not be an everyday word that happens
to start with one ("周末", "马上"); a "X 是我的 Y" statement only names a person when Y is a role
or relationship word. That is what keeps "今天是我的生日" from becoming a person.
"""

from __future__ import annotations

# The ~120 most common Chinese surnames (single character) plus a few common compound ones.
SURNAMES: frozenset[str] = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
    "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾"
    "毛郝龚邵万钱严覃武戴莫孔向汤温康施牛樊葛邢乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿"
)
COMPOUND_SURNAMES: frozenset[str] = frozenset({"欧阳", "司马", "上官", "诸葛", "东方", "慕容"})

# Everyday words that start with a surname character: never a person's name.
NOT_NAMES: frozenset[str] = frozenset({
    "周末", "周一", "周二", "周三", "周四", "周五", "周六", "周日", "周天", "周年", "周报", "周会",
    "周围", "周期", "周边", "高兴", "高速", "高级", "高考", "高铁", "高中", "马上", "马路", "方便",
    "方面", "方法", "方案", "方向", "于是", "黄金", "黄色", "金额", "金钱", "石头", "白天", "白色",
    "白菜", "江湖", "万一", "向来", "向前", "龙头", "史上", "任何", "任务", "程序", "程度", "安全",
    "安排", "安装", "常常", "常用", "许多", "许可", "夏天", "夏季", "钟头", "陆续", "何时", "何必",
    "曾经", "叶子", "谢谢", "谢了", "张开", "陈述", "范围", "付款", "付钱", "段落", "贺卡", "顾客",
    "毛巾", "钱包", "严重", "严格", "武器", "文件", "文档", "文章", "文字", "成功", "成本", "成为",
    "成员", "康复", "温度", "温暖", "齐全", "易用", "关于", "关系", "关键", "包括", "宁可", "尚未",
    "单位", "季度", "路上", "路由", "游戏", "游泳", "管理", "华为", "孙子", "康康", "章节", "鲁莽",
    "甘心", "柴油", "蒙古", "兰州", "左边", "左右", "易懂", "雷雨", "戴上", "常规", "施工", "牛奶",
    "曲线", "骆驼", "蓝色", "辛苦", "包子", "成都", "成绩", "宋体", "韩国", "田地", "余下", "杜绝",
    "苏醒", "邓邓", "熊猫", "陶瓷", "童年", "凌晨", "毕业", "单独", "涂料", "苗条", "谷歌", "盛大",
    "翁翁", "冉冉", "管家", "华丽", "喻义", "孔子", "汤圆", "常温", "温习", "文明", "齐心", "乔迁",
    "庞大", "颜色", "庄园", "章程", "岳父", "岳母", "殷勤", "申请", "欧洲", "耿直", "焦虑", "左手",
    "柳树", "祝福", "包裹", "宁静", "符合", "舒服", "舒适", "纪念", "梅花", "毕竟", "霍乱", "盛开",
    "曲折", "游客", "辛勤", "管道", "蒙住", "华人",
})

# Role or relationship words (Chinese): "X 是我的 <…role>" names a person only with one of these.
ROLES_ZH: tuple[str, ...] = (
    "太太", "妻子", "老婆", "爱人", "丈夫", "先生", "老公", "女儿", "儿子", "孩子", "爸爸", "父亲",
    "妈妈", "母亲", "哥哥", "姐姐", "弟弟", "妹妹", "爷爷", "奶奶", "外公", "外婆", "姥姥", "姥爷",
    "岳父", "岳母", "公公", "婆婆", "叔叔", "阿姨", "舅舅", "表哥", "表姐", "表弟", "表妹", "朋友",
    "好友", "闺蜜", "同学", "室友", "邻居", "同事", "老板", "上司", "领导", "主管", "经理", "总监",
    "总裁", "老师", "教练", "医生", "牙医", "大夫", "护士", "律师", "会计", "助理", "秘书",
    "设计师", "工程师", "负责人", "搭子", "搭档", "伙伴", "合伙人", "客户", "房东", "顾问", "导师",
    "架构师",
    "组长", "队长", "班主任", "师傅", "HR", "PM", "CTO", "CEO", "CFO", "COO", "QA", "DBA",
    # occupations
    "程序员", "运营", "销售", "财务", "出纳", "行政", "人事", "前台", "客服", "编辑", "记者",
    "翻译", "药剂师", "厨师", "司机", "保安", "教授", "讲师", "研究员", "研究生", "博士生", "学生",
    "实习生", "主任", "店长", "分析师", "咨询师", "主管", "专员", "助教", "保姆", "快递员", "警察",
    # heads of a school, an institute or an office ("副校长", "学院院长")
    "博士后", "校长", "院长", "所长", "部长", "处长", "科长", "行长", "馆长",
)

# Role words (English): "Tom Becker is our DevOps lead" names a person only with one of these.
ROLES_EN: frozenset[str] = frozenset({
    "manager", "lead", "designer", "engineer", "developer", "dentist", "doctor", "wife", "husband",
    "partner", "son", "daughter", "mother", "father", "mom", "mum", "dad", "brother", "sister",
    "friend", "colleague", "coworker", "boss", "pm", "cto", "ceo", "cfo", "coo", "founder",
    "cofounder", "co-founder", "coordinator", "director", "architect", "analyst", "tester", "qa",
    "recruiter", "hr", "teacher", "coach", "lawyer", "accountant", "assistant", "landlord",
    "neighbor", "neighbour", "roommate", "intern", "owner", "head", "vp", "consultant", "advisor",
    "adviser", "mentor", "nurse", "therapist", "tutor", "secretary", "admin", "administrator",
    "sre", "devops", "specialist", "researcher", "scientist", "officer", "chief", "captain",
    "employee", "trainee", "attendee", "referee", "nominee", "mentee", "assignee",
    # occupations not formed like a trade (people.role_word reads "-er", "-ist"… itself)
    "vet", "chef", "cook", "clerk", "student", "paramedic", "surgeon", "midwife", "paralegal",
    "nanny", "pilot", "vicar", "priest", "carer", "medic", "physio", "postdoc", "associate",
    "principal", "dean", "judge", "model", "fellow", "staff", "matron", "headteacher",
    "registrar", "firefighter", "hca", "gp", "em",
    # note-taking abbreviations of a role ("ops mgr", "eng lead", "shift sup")
    "mgr", "supv", "sup", "rep", "exec",
})

# Capitalised words that start sentences but are not first names.
NOT_FIRST_NAMES: frozenset[str] = frozenset({
    "The", "This", "That", "These", "Those", "It", "Its", "He", "She", "They", "We", "I", "You",
    "Our", "My", "His", "Her", "Their", "There", "Here", "What", "Who", "Where", "When", "Why",
    "How", "Project", "Not", "So", "Very", "Really", "Just", "Back", "Done", "Sorry", "Fine",
    "Good", "Happy", "Glad", "Going", "Still", "Also", "Always", "Busy", "Ready", "Sure", "Late",
    "Home", "Out", "In", "On", "At", "Off", "Working", "Looking", "Trying", "A", "An", "Hi",
    "Hello", "Hey", "Thanks", "Thank", "Please", "Yes", "No", "Ok", "Okay", "Team", "Every",
    "Today", "Tomorrow", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
    "Sunday", "Remember", "Remind", "Added", "Noted", "Saved", "Logged", "Marked", "Welcome",
    "Got", "Understood", "Meeting", "Reminder", "Todo", "Note", "New", "Next", "Last", "First",
    "Your", "Side", "Pet", "Big", "Small", "Group", "School", "Class", "Art", "Science",
    "Research", "Final", "Work", "Personal", "Garden", "Volunteer", "Community", "Charity",
})

# Two-character Chinese strings that say nothing about which todo is meant.
STOP_BIGRAMS: frozenset[str] = frozenset({
    "已经", "一下", "提醒", "今天", "明天", "这个", "那个", "我们", "你们", "他们", "一个", "时候",
    "之前", "以前", "发给", "交给", "给我", "我的", "帮我", "记得", "完成", "标记", "已标", "记完",
    "一起", "还有", "然后", "下午", "上午", "晚上", "早上", "中午", "这周", "下周", "周五", "周四",
})

# English words too common to identify a todo.
STOP_WORDS: frozenset[str] = frozenset({
    "with", "that", "this", "from", "about", "into", "when", "what", "then", "than", "them",
    "they", "have", "will", "just", "done", "also", "after", "before", "over", "your", "their",
    "there", "here", "were", "been", "being", "left", "make", "made", "some", "more", "most",
    "today", "tomorrow", "tonight", "week", "please", "remind", "todo", "sent", "send",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "recurring",
    "event", "added", "marked", "starting",
})
